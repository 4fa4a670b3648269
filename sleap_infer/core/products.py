"""What a run makes, named once: the four products and one record of how many of each.

Models make different things: keypoint instances, segmentation masks, boxes,
re-ID vectors. Each model type's registry entry says which it makes; each
output format's registry entry says which it holds; one check
(``writers.registry.refuse``) compares the two, so a format never silently drops a product
and a new product is one member here plus the writers that hold it. A run's
totals travel as one :class:`Counts` record, from the journal to the result,
the batch outcome and the run summary, never field by field.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from enum import Enum


class Product(str, Enum):
    """One kind of thing a model predicts (its value is the word the outputs use)."""

    POSES = "instances"
    MASKS = "masks"
    BOXES = "boxes"
    EMBEDDINGS = "embeddings"

    @property
    def noun(self) -> str:
        """What a message calls it: ``segmentation masks``, ``re-ID embedding vectors``."""
        return _NOUNS[self]


_NOUNS = {
    Product.POSES: "pose instances",
    Product.MASKS: "segmentation masks",
    Product.BOXES: "bounding boxes",
    Product.EMBEDDINGS: "re-ID embedding vectors",
}


@dataclass
class Counts:
    """How much a run (or a video, or a batch of videos) predicted."""

    frames: int = 0  # frames predicted (a resumed video counts all its runs' frames)
    instances: int = 0
    masks: int = 0  # masks with a set pixel (the ones an output holds)
    boxes: int = 0
    embeddings: int = 0  # re-ID vectors on kept instances
    tracks: int = 0  # tracks the tracker made (tracked runs)
    frames_with_instances: int = 0  # frames with an instance, a mask or a box
    mean_score: float | None = None  # of instances, else masks, else boxes; None: none found

    def of(self, product: Product) -> int:
        return int(getattr(self, product.value))

    @property
    def headline(self) -> Product:
        """What a one-line report counts: instances, else the first product found
        (a segmentation model's masks, a detector's boxes)."""
        for product in Product:
            if self.of(product):
                return product
        return Product.POSES

    def to_json(self) -> dict[str, int | float | None]:
        return asdict(self)

    @classmethod
    def total(cls, parts: Iterable[Counts]) -> Counts:
        """The sum of ``parts`` (no mean score: a mean of means would mislead)."""
        out = cls()
        for part in parts:
            for f in fields(cls):
                if f.name != "mean_score":
                    setattr(out, f.name, getattr(out, f.name) + getattr(part, f.name))
        return out
