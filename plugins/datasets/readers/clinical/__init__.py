"""Readers for the licence-restricted clinical distribution formats, one module per format family.

biolm ships none of these files (they come under data use agreements); users point the platform
at their own copies. Each module declares ``ADAPTERS`` for its slugs; this package merges them.

* ``mednli`` -- MedNLI JSONL (PhysioNet);
* ``i2b2_concepts`` -- i2b2 2010 concept files and i2b2 2012 event/TIMEX3 XML;
* ``i2b2_relations`` -- i2b2 2010 relation files (candidate concept pairs per sentence);
* ``i2b2_deid`` -- i2b2 2006 inline-PHI XML and i2b2 2014 standoff XML;
* ``n2c2_brat`` -- n2c2 2018 track 2 brat standoff (concepts and drug-ADE relations);
* ``sts`` -- n2c2 2019 clinical STS tab-separated pairs;
* ``emrqa`` -- emrQA in SQuAD format;
* ``csv_tables`` -- OpenI/MIMIC-CXR findings and MIMIC-AKI tables.

Shared conventions (tokenisation, BIO tagging, overlaps, dev carve-outs) are in ``_shared``.
"""

from __future__ import annotations

from biolm.specs import AdapterSpec
from plugins.datasets.readers.clinical import (
    csv_tables,
    emrqa,
    i2b2_concepts,
    i2b2_deid,
    i2b2_relations,
    mednli,
    n2c2_brat,
    sts,
)

ADAPTERS: dict[str, AdapterSpec] = {
    **mednli.ADAPTERS,
    **i2b2_concepts.ADAPTERS,
    **i2b2_relations.ADAPTERS,
    **i2b2_deid.ADAPTERS,
    **n2c2_brat.ADAPTERS,
    **sts.ADAPTERS,
    **emrqa.ADAPTERS,
    **csv_tables.ADAPTERS,
}
