"""tito, the TinyTorch course tool: `tito.cli` is the command line. Importing it changes nothing outside it."""
