"""What the summary scripts share: reading a run's JSON report, a geometric mean."""
import json
import math
import os


def load(folder, name):
    """The report `folder/name.json`, or None if that run has not been made."""
    path = os.path.join(folder, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def geomean(xs):
    """The geometric mean of the positive numbers of `xs` (NaN if there are none)."""
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
