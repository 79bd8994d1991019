"""The controller's admin API: what each request of the admin listener means (see base)."""
