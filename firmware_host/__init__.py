"""firmware-host: referee a sensor-equipped Russian billiards table over a serial link."""

__version__ = "0.1.0"
