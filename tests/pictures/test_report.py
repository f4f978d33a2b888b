"""`firmware-host report`: a match as one HTML file, opened in a real headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from web_util import chromium

from firmware_host.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "hil_tests" / "corpus" / "random_s1_0.5min.full.bin"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "match.html"
    assert main(["report", str(CAPTURE), "-o", str(out)]) == 0
    return out


def verdicts(capsys: pytest.CaptureFixture[str]) -> dict[int, dict]:
    assert main(["replay", str(CAPTURE)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    return {v["shot"]: v for v in lines if v.get("shot") and not v.get("early")}


def test_every_shot_has_its_verdict_and_picture_and_nothing_is_fetched(page, capsys):
    from selenium.webdriver.common.by import By

    expected = verdicts(capsys)
    browser = chromium()
    try:
        browser.get(page.as_uri())
        shots = browser.find_elements(By.CSS_SELECTOR, "section.shot")
        assert [int(s.get_attribute("id").split("-")[1]) for s in shots] == sorted(expected)
        for shot in shots:
            number = int(shot.get_attribute("id").split("-")[1])
            said = shot.find_element(By.CSS_SELECTOR, ".verdict").text
            want = expected[number]
            assert " ".join(want["reason"].split()) in " ".join(said.split())
            picture = shot.find_element(By.CSS_SELECTOR, ".picture svg")
            assert picture.size["width"] > 400 and picture.size["height"] > 200
            cited = shot.find_elements(By.CSS_SELECTOR, ".rule div[lang=ru] p")
            assert cited and all(c.text.strip() for c in cited)  # the Russian original
        # nothing left the file: no resource was requested, nothing but the page itself
        requested = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert requested == []
        assert browser.execute_script("return document.scripts.length") == 0
        lamp = browser.find_elements(
            By.XPATH, "//h2[text()='The lamp']/following-sibling::table[1]//tr"
        )
        assert len(lamp) - 1 == len(expected)  # a lamp change per decided shot
    finally:
        browser.quit()


def test_a_report_needs_an_output_and_a_capture(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none.bin"), "-o", str(tmp_path / "x.html")]) == 2
    assert "none.bin" in capsys.readouterr().err


def test_each_verdict_is_said_once_per_shot(page, capsys):
    """The verdict paragraph says it; the picture under it has no title repeating it."""
    from selenium.webdriver.common.by import By

    expected = verdicts(capsys)
    browser = chromium()
    try:
        browser.get(page.as_uri())
        for shot in browser.find_elements(By.CSS_SELECTOR, "section.shot"):
            number = int(shot.get_attribute("id").split("-")[1])
            said = " ".join(shot.get_attribute("textContent").split())
            reason = " ".join(expected[number]["reason"].split())
            assert said.count(reason) == 1, (number, said)
            titles = browser.execute_script(
                "return [...arguments[0].querySelectorAll('svg text')]"
                ".map(t => t.textContent).filter(t => t.startsWith('Shot '))",
                shot,
            )
            assert titles == []
    finally:
        browser.quit()
