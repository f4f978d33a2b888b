"""One module per ``firmware-host`` subcommand (see ``firmware_host.cli.main``)."""
