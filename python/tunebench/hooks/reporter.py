"""What every hook module shares: the run it serves, the tracker it reports to, what an internal error does.

The hook interface, the same in each module of this package that reports events:
  install(run, tracker, on_error)  patches or registers what it watches;
  disable()                        stops reporting and leaves the patches in place (after an internal error,
                                   in a forked child: torch.compile may have guarded on them);
  uninstall()                      restores what it patched.
The hooks never raise into the script: an internal error calls `fail(e)`, which turns the module's reporting
off and tells `on_error` (the launcher says it once)."""


class Reporter:
    __slots__ = ("run", "tracker", "on_error")

    def __init__(self):
        self.run = self.tracker = self.on_error = None

    def attach(self, run, tracker, on_error):
        self.run, self.tracker, self.on_error = run, tracker, on_error

    def disable(self):
        self.tracker = None

    def fail(self, e):
        self.tracker = None
        if self.on_error is not None:
            self.on_error(e)

    def detach(self):
        self.run = self.tracker = None
