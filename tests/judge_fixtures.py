"""Two short summaries the judge tests score (plain prose, 12 sentences in all)."""

from __future__ import annotations

SUMMARIES = {
    "first.epub": (
        "Mara inherits a bakery in the harbour town of Lisk. Her cousin Teo wants to sell it. "
        "She discovers her grandmother's recipe book hidden under the oven. A rival baker, Quill, "
        "offers to buy the recipes. Mara refuses and enters the town's bread contest. "
        "Teo changes his mind after tasting her rye loaf. The bakery stays in the family for good."
    ),
    "second.epub": (
        "An old pilot flies mail across the northern mountains. One winter his engine fails. "
        "He lands on a frozen lake and waits three days for rescue. A girl from a nearby village finds him. "
        "He teaches her to fly."
    ),
}
