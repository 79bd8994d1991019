"""The `reassignd` command: one entry point for the daemon, the simulated cluster and the tools."""
