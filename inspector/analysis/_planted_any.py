from typing import Any


def f(x: Any) -> int:
    return 1
