"""The rule every paid command's plan passes: below ``--max-plan-cost`` or confirmed, it runs.

Its own module, light on imports: ``summarize`` checks its plan before the first call, and that
check must not load the judge's planner (scoring, Punkt, prompts) that only ``score`` and
``compare`` use.
"""

from __future__ import annotations

from booksum_app.errors import ConfigError
from booksum_app.money import usd


def check_cost(cost_usd: float | None, *, max_cost_usd: float, confirmed: bool, interactive: bool) -> bool:
    """Whether a run may start without asking: True below the threshold or with ``--yes``.
    ``cost_usd`` None: a paid model booksum has no price for, never below any threshold.

    Raises:
        ConfigError: over the threshold (or unpriced), not confirmed, and nobody to ask (stdin is not a TTY).
    """
    if confirmed or (cost_usd is not None and cost_usd <= max_cost_usd):
        return True
    if not interactive:
        if cost_usd is None:
            raise ConfigError("the plan's cost is unknown: booksum has no price for its model; give its prices "
                              "under [models] in config.toml (docs/models.md) or pass --yes to run it")
        raise ConfigError(
            f"the plan could cost up to {usd(cost_usd)}, above --max-plan-cost "
            f"{usd(max_cost_usd)}; pass --yes to run it or raise --max-plan-cost"
        )
    return False


__all__ = ["check_cost"]
