"""The HIL corpus plugin, and pytester for the plugin's own tests."""

pytest_plugins = ["hil_tests.plugin", "pytester"]
