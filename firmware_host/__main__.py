from . import signal_exit_status

try:
    from .cli.main import main
except KeyboardInterrupt:  # Ctrl-C while still importing: no traceback
    raise SystemExit(130) from None
except Exception:
    status = signal_exit_status()  # an import that a signal broke: the signal's status
    if status is None:
        raise
    raise SystemExit(status) from None

raise SystemExit(main())
