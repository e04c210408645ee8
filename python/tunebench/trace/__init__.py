"""A script's timeline: torch.profiler sessions of a few steps each (tracer), the chunk files they become,
with TuneBench's own pauses drawn in them (chunk), and the writer that saves them off the training thread
(writer)."""
