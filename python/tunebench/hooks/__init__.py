"""The hooks a script runs under, one module per thing watched or changed:
  dataloader   each batch's fetch (the loader stall) and the DataLoader's knobs (workers, pin_memory, ...);
  forward      the model's forward and backward, through torch's global module hooks;
  optimizer    each Optimizer.step(), closures (LBFGS) and GradScaler included, and zero_grad's knob;
  update       a hand-written update (clip_grad_norm_, a no_grad block changing parameters);
  save         torch.save of a model, so a knob never shows in what the script saves;
  children     processes the script starts (a DataLoader's workers, its own multiprocessing);
  model        what the model-level knobs change (amp, channels_last, compile) and undo;
  compile_events  what torch.compile did (each compile's phases, recompile reason, graph breaks), read from
               torch._dynamo's structured trace (its texts: compile_text).
The interface they share (install, disable, uninstall; never raise into the script) is reporter.py's."""
