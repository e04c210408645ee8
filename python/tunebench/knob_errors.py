"""What the knob catalog (knobs.py) and the hooks that apply its knobs share: the error a knob that cannot
apply raises, and the torch version both check. A module of its own so that the hooks need not import the
catalog, which imports them."""

import torch


class KnobError(Exception):
    pass


def torch_major():
    try:
        return int(torch.__version__.split(".")[0])
    except ValueError:
        return 1
