from . import signal_exit_status

try:
    from .cli.main import main
except KeyboardInterrupt:  # Ctrl-C while still importing: no traceback
    raise SystemExit(130) from None
except Exception:
    if signal_exit_status() is None:
        raise
    raise SystemExit(signal_exit_status()) from None

raise SystemExit(main())
