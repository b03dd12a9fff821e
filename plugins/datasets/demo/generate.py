"""Regenerate the BLURB-mini demo data files deterministically (invented demo data, not a real benchmark).

``make demo`` must fine-tune a tiny model on every BLURB task type on a fresh machine with no
downloaded data, so biolm ships six small datasets of its own. Every sentence is invented from
the templates and vocabulary lists below with fixed seeds: no text is copied from a real corpus,
and scores on these files mean nothing about real performance.

Running ``python plugins/datasets/demo/generate.py [output directory]`` (default: this file's
directory) rewrites, byte for byte, the files that ship:

* ``demo-<task>/{train,dev,test}.jsonl`` -- one example per line with exactly the fields of the
  canonical schema (``biolm.schemas``); ids start with ``demo-`` so every file says it is demo data;
* ``corpus.txt`` -- unlabelled invented abstracts for demo pretraining, one document per line; the
  first line says it is invented demo text.

tests/test_demo_benchmark.py regenerates everything into a temporary directory and compares bytes,
so edit this script, rerun it, and commit both. Only the standard library is used, and only
``random.Random`` seeded with strings (independent of PYTHONHASHSEED and of the machine).

How the labels are made learnable but not trivial (a tiny BERT should visibly learn, not reach 100):

* NER: chemicals and diseases are tagged B/I/O (untyped, like BLURB's NER files); about a third of
  the dev/test mentions use names never seen in training, and gene names appear untagged;
* PICO: participant/intervention/outcome phrases come from compositional lists; annotators'
  habits are imitated by tagging a leading count or "placebo" inconsistently;
* relations: the CPR class follows the verb ("inhibited" -> CPR:4, "increased" -> CPR:3,
  "is metabolized by" -> CPR:9), but negations, a cue verb acting on another entity, one template
  per label seen only in dev/test, and 5% label noise keep it from being a lookup table;
* similarity: a pair's score is its paraphrase level (0-4) plus annotator-like noise (sd 0.25);
* documents: each hallmark has cue sentences; some abstracts state a hallmark only weakly and a
  few cue sentences are left unlabelled, as in real annotation;
* QA: the answer follows the result sentence about the asked outcome; in 60% of the passages a
  distractor result about another outcome comes with it (before it in 30% of those); 5% label noise.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = "biolm-blurb-mini-v1"
SIZES = {
    "demo-ner": (300, 60, 60),
    "demo-pico": (150, 40, 40),
    "demo-relation": (300, 60, 60),
    "demo-similarity": (240, 30, 30),
    "demo-doc-classification": (200, 40, 40),
    "demo-qa": (200, 40, 40),
}
SPLITS = ("train", "dev", "test")
CORPUS_DOCUMENTS = 110
CORPUS_HEADER = (
    "Demo corpus: invented biomedical abstracts written by the biolm project for demo pretraining; "
    "it is not real text and models trained on it mean nothing about real performance."
)

# --- vocabulary ---------------------------------------------------------------------------------
# The last names of CHEMICALS and DISEASES are held out: they appear only in dev/test sentences.

CHEMICALS = (
    "cisplatin",
    "doxorubicin",
    "tamoxifen",
    "metformin",
    "paclitaxel",
    "gemcitabine",
    "imatinib",
    "lithium",
    "haloperidol",
    "acetaminophen",
    "ibuprofen",
    "aspirin",
    "warfarin",
    "heparin",
    "dexamethasone",
    "prednisolone",
    "cyclophosphamide",
    "methotrexate",
    "vincristine",
    "carboplatin",
    "5-fluorouracil",
    "sorafenib",
    "gefitinib",
    "rapamycin",
    "resveratrol",
    "curcumin",
    "nicotine",
    "caffeine",
    "morphine",
    "ketamine",
    "lidocaine",
    "amiodarone",
    "digoxin",
    "verapamil",
    "captopril",
    "atorvastatin",
    "streptozotocin",
    "bleomycin",
    "valproic acid",
    "carbamazepine",
    "levodopa",
    "clozapine",
    "fluoxetine",
    "cocaine",
    "gentamicin",
    "vancomycin",
    "rifampicin",
    "isoniazid",
    "hydrogen peroxide",
    "nitric oxide",
    "arsenic trioxide",
    "all-trans retinoic acid",
    "puromycin aminonucleoside",
    # held out from training
    "oxaliplatin",
    "erlotinib",
    "quercetin",
    "propofol",
    "nifedipine",
    "losartan",
    "simvastatin",
    "phenytoin",
    "risperidone",
    "sertraline",
    "ciprofloxacin",
    "zoledronic acid",
    "mycophenolate mofetil",
    "sodium valproate",
)
CHEMICALS_HELD_OUT = 14

DISEASES = (
    "hepatotoxicity",
    "nephrotoxicity",
    "cardiomyopathy",
    "acute kidney injury",
    "breast cancer",
    "hepatocellular carcinoma",
    "type 2 diabetes",
    "Parkinson disease",
    "Alzheimer disease",
    "seizures",
    "hypertension",
    "heart failure",
    "myocardial infarction",
    "tardive dyskinesia",
    "neutropenia",
    "thrombocytopenia",
    "peripheral neuropathy",
    "liver fibrosis",
    "pulmonary fibrosis",
    "ovarian cancer",
    "non-small cell lung cancer",
    "colorectal cancer",
    "glioblastoma",
    "acute myeloid leukemia",
    "rheumatoid arthritis",
    "asthma",
    "sepsis",
    "hypotension",
    "bradycardia",
    "ventricular arrhythmia",
    "schizophrenia",
    "depression",
    "bipolar disorder",
    "epilepsy",
    "stroke",
    "anemia",
    "hyperkalemia",
    "hypoglycemia",
    "insulin resistance",
    "proteinuria",
    "delirium",
    "rhabdomyolysis",
    "cardiotoxicity",
    "ototoxicity",
    "oral mucositis",
    # held out from training
    "lupus nephritis",
    "QT prolongation",
    "pancreatitis",
    "interstitial lung disease",
    "Stevens-Johnson syndrome",
    "agranulocytosis",
    "hemorrhagic cystitis",
    "serotonin syndrome",
    "malignant hyperthermia",
    "aplastic anemia",
    "migraine",
)
DISEASES_HELD_OUT = 11

GENES = (
    "CYP3A4",
    "CYP2D6",
    "CYP1A2",
    "CYP2C9",
    "COX-2",
    "EGFR",
    "HER2",
    "VEGF",
    "TNF-alpha",
    "IL-6",
    "AKT",
    "mTOR",
    "ERK1/2",
    "p53",
    "Bcl-2",
    "caspase-3",
    "NF-kappaB",
    "PPARgamma",
    "AMPK",
    "HMG-CoA reductase",
    "acetylcholinesterase",
    "MAO-B",
    "P-glycoprotein",
    "MMP-9",
    "iNOS",
    "GLUT4",
    "aromatase",
    "topoisomerase II",
    "thymidylate synthase",
    "dihydrofolate reductase",
    "HDAC1",
    "PARP-1",
    "JAK2",
    "STAT3",
    "SIRT1",
    "Nrf2",
    "HO-1",
    "UGT1A1",
    "estrogen receptor alpha",
    "androgen receptor",
)

SPECIES = ("male Wistar rats", "Sprague-Dawley rats", "C57BL/6 mice", "BALB/c mice", "New Zealand rabbits", "zebrafish")
CELLS = (
    "HepG2 cells",
    "MCF-7 cells",
    "A549 cells",
    "HeLa cells",
    "PC12 cells",
    "HUVECs",
    "primary rat hepatocytes",
    "SH-SY5Y cells",
    "HCT116 cells",
    "RAW 264.7 macrophages",
)
CANCERS = (
    "breast cancer",
    "hepatocellular carcinoma",
    "colorectal cancer",
    "glioblastoma",
    "non-small cell lung cancer",
    "ovarian cancer",
    "gastric cancer",
    "pancreatic cancer",
)
DOSES = ("5 mg / kg", "10 mg / kg", "20 mg / kg", "50 mg / kg", "1 mg / day", "100 mg twice daily", "2 g / m2")


CANCER_CELLS = (
    "MCF-7 cells",
    "MDA-MB-231 cells",
    "A549 cells",
    "HCT116 cells",
    "U87 glioma cells",
    "HepG2 cells",
    "SKOV3 cells",
    "PANC-1 cells",
)
ANTICANCER_AGENTS = (
    "cisplatin",
    "doxorubicin",
    "tamoxifen",
    "metformin",
    "paclitaxel",
    "gemcitabine",
    "imatinib",
    "5-fluorouracil",
    "sorafenib",
    "gefitinib",
    "rapamycin",
    "resveratrol",
    "curcumin",
    "arsenic trioxide",
    "all-trans retinoic acid",
    "vincristine",
)
CANCER_GENES = (
    "EGFR",
    "HER2",
    "AKT",
    "mTOR",
    "STAT3",
    "JAK2",
    "SIRT1",
    "Nrf2",
    "HDAC1",
    "PARP-1",
    "COX-2",
    "NF-kappaB",
)
ENZYMES = ("CYP3A4", "CYP2D6", "CYP1A2", "CYP2C9", "UGT1A1", "aromatase", "P-glycoprotein")


def split_rng(slug: str, split: str) -> random.Random:
    """One generator per dataset and split: changing one split never reshuffles another."""
    return random.Random(f"{SEED}:{slug}:{split}")


def pick(rng: random.Random, names: tuple[str, ...], held_out: int, split: str) -> str:
    """A name seen in training or, in dev/test about a third of the time, one never seen there."""
    if split != "train" and rng.random() < 0.35:
        return rng.choice(names[len(names) - held_out :])
    return rng.choice(names[: len(names) - held_out])


def chemical(rng: random.Random, split: str = "train") -> str:
    return pick(rng, CHEMICALS, CHEMICALS_HELD_OUT, split)


def disease(rng: random.Random, split: str = "train") -> str:
    return pick(rng, DISEASES, DISEASES_HELD_OUT, split)


def fill(rng: random.Random, template: str, **slots: Callable[[], str]) -> str:
    """Replace every ``{name}`` of ``template`` with a fresh draw of ``slots[name]``."""
    return re.sub(r"\{(\w+)\}", lambda match: slots[match.group(1)](), template)


def common_slots(rng: random.Random, split: str = "train") -> dict[str, Callable[[], str]]:
    return {
        "C": lambda: chemical(rng, split),
        "D": lambda: disease(rng, split),
        "G": lambda: rng.choice(GENES),
        "species": lambda: rng.choice(SPECIES),
        "cells": lambda: rng.choice(CELLS),
        "cancer": lambda: rng.choice(CANCERS),
        "cancer_cells": lambda: rng.choice(CANCER_CELLS),
        "dose": lambda: rng.choice(DOSES),
        "n": lambda: str(rng.randint(2, 96)),
        "age": lambda: str(rng.randint(19, 88)),
        "w": lambda: str(rng.choice((4, 6, 8, 12, 24, 52))),
    }


def capitalise(text: str) -> str:
    return text[0].upper() + text[1:]


def detokenise(tokens: list[str]) -> str:
    """Turn the tokenised demo sentences back into running text for the corpus."""
    text = " ".join(tokens)
    text = re.sub(r" ([,.;:)%])", r"\1", text)
    text = re.sub(r"\( ", "(", text)
    return re.sub(r" ([-/]) ", r"\1", text)


# --- NER: chemicals and diseases, untyped B/I/O (BLURB strips entity types too) -------------------

NER_TEMPLATES = (
    "{C} - induced {D} in {species} was associated with increased oxidative stress .",
    "Patients treated with {C} developed {D} after a median of {n} days .",
    "We report a case of {D} following {C} administration in a {age} - year - old woman .",
    "The incidence of {D} was significantly higher in the {C} group than in the control group ( P < 0.05 ) .",
    "{C} is widely used in the treatment of {D} , but its use is limited by {D} .",
    "Pretreatment with {C} attenuated {C} - induced {D} and reduced {G} expression .",
    "Chronic exposure to {C} may contribute to the development of {D} .",
    "These findings suggest that {C} protects against {D} by inhibiting {G} .",
    "{D} is a rare but serious adverse effect of {C} therapy .",
    "Serum levels of {G} were elevated in patients with {D} .",
    "The mechanism by which {C} causes {D} remains unclear .",
    "A total of {n} patients with {D} received {C} at a dose of {dose} .",
    "{C} and {C} were equally effective in reducing the severity of {D} .",
    "Withdrawal of {C} led to complete resolution of {D} within {n} weeks .",
    "Risk factors for {D} included advanced age , renal impairment and concomitant use of {C} .",
    "In {cells} , {C} increased the expression of {G} in a dose - dependent manner .",
    "Mice lacking {G} were resistant to {C} - induced {D} .",
    "The clinical features of {D} and {D} overlap considerably in elderly patients .",
    "{C} ( {dose} ) was given intraperitoneally for {n} consecutive days .",
    "Hepatic {G} activity was measured {n} hours after the last dose of {C} .",
    "Long - term treatment with {C} is associated with an increased risk of {D} .",
    "{D} was defined as a rise in serum creatinine of at least 0.3 mg / dL within 48 hours .",
    "Histological examination revealed {D} in {n} of {n} animals exposed to {C} .",
    "Coadministration of {C} enhanced the antitumor activity of {C} against {D} xenografts .",
    "No cases of {D} were observed in patients receiving {C} alone .",
    "Plasma concentrations of {C} correlated with the severity of {D} ( r = 0.{n} ) .",
    "{C} remains the first - line treatment for patients with {D} .",
    "Patients with a history of {D} or {D} were excluded from the study .",
    "{G} polymorphisms did not predict the response to {C} in {D} .",
    "Treatment with {C} improved survival in a rat model of {D} .",
    "The combination of {C} and {G} inhibition delayed the onset of {D} .",
    "{D} developed in {n} % of patients during {C} infusion .",
    "Oral {C} reversed the {D} caused by {C} in {species} .",
    "Our data indicate that {G} mediates the protective effect of {C} .",
)
NER_PLAIN = (
    "The study was approved by the institutional review board and all participants gave written informed consent .",
    "Data were analysed using a mixed - effects model adjusted for age and sex .",
    "Body weight and food intake were recorded daily throughout the experiment .",
    "Blood samples were collected at baseline and at the end of follow - up .",
    "Values are expressed as mean +/- standard deviation .",
    "Animals were housed under a 12 h light / dark cycle with free access to water .",
    "Further prospective studies are needed to confirm these observations .",
    "Protein levels were determined by Western blotting and normalised to beta - actin .",
)


def ner_sentence(rng: random.Random, split: str) -> tuple[list[str], list[str]]:
    """Tokens and B/I/O tags: chemicals and diseases are entities, genes and everything else O."""
    if rng.random() < 0.1:
        tokens = rng.choice(NER_PLAIN).split()
        return tokens, ["O"] * len(tokens)
    slots = common_slots(rng, split)
    tokens: list[str] = []
    tags: list[str] = []
    for word in rng.choice(NER_TEMPLATES).split():
        match = re.fullmatch(r"(.*)\{(\w+)\}(.*)", word)
        if match is None:
            tokens.append(word)
            tags.append("O")
            continue
        before, slot, after = match.groups()
        words = slots[slot]().split()
        words[0], words[-1] = before + words[0], words[-1] + after
        tokens += words
        if slot in ("C", "D"):
            tags += ["B"] + ["I"] * (len(words) - 1)
        else:
            tags += ["O"] * len(words)
    tokens[0] = capitalise(tokens[0])
    return tokens, tags


def ner_example(rng: random.Random, split: str) -> tuple[str | None, dict]:
    tokens, tags = ner_sentence(rng, split)
    key = None if "B" not in tags else " ".join(tokens)  # entity-free sentences may repeat
    return key, {"document_id": "", "tokens": tokens, "tags": tags}


# --- PICO: IO tags as in BLURB's EBM PICO files --------------------------------------------------

POPULATIONS = (
    "adults",
    "children",
    "adolescents",
    "older adults",
    "postmenopausal women",
    "pregnant women",
    "patients",
    "outpatients",
    "men",
)
CONDITIONS = (
    "type 2 diabetes",
    "chronic low back pain",
    "moderate to severe asthma",
    "major depressive disorder",
    "knee osteoarthritis",
    "essential hypertension",
    "chronic heart failure",
    "mild cognitive impairment",
    "stage III colon cancer",
    "chronic obstructive pulmonary disease",
    "acute ischaemic stroke",
    "rheumatoid arthritis",
    "obesity",
    "chronic insomnia",
)
SETTINGS = (
    "attending primary care clinics",
    "recruited from three university hospitals",
    "living in rural communities",
    "admitted to intensive care",
)
TREATMENTS = (
    "metformin",
    "atorvastatin",
    "sertraline",
    "montelukast",
    "duloxetine",
    "tiotropium",
    "liraglutide",
    "dexamethasone",
    "tranexamic acid",
    "melatonin",
    "omega-3 fatty acids",
    "probiotics",
)
ROUTES = ("oral", "intravenous", "inhaled", "subcutaneous", "daily")
TREATMENT_DOSES = ("", "10 mg once daily", "500 mg twice daily", "for 12 weeks", "at bedtime")
THERAPIES = (
    "cognitive behavioural therapy",
    "a 12-week supervised exercise programme",
    "mindfulness-based stress reduction",
    "acupuncture",
    "vitamin D supplementation",
    "intravenous iron sucrose",
    "a low-carbohydrate diet",
    "telephone-based nurse counselling",
    "early mobilisation",
    "high-flow nasal oxygen",
)
CONTROLS = (
    "placebo",
    "usual care",
    "a matching placebo",
    "standard physiotherapy",
    "no treatment",
    "sham acupuncture",
    "a waiting list",
)
OUTCOMES = (
    "glycated haemoglobin",
    "pain intensity",
    "all-cause mortality",
    "health-related quality of life",
    "length of hospital stay",
    "systolic blood pressure",
    "time to first exacerbation",
    "depressive symptoms",
    "fasting plasma glucose",
    "serious adverse events",
    "forced expiratory volume in one second",
    "sleep onset latency",
    "functional independence",
    "body weight",
    "hospital readmission rate",
    "cognitive performance",
)
PICO_TEMPLATES = (
    ("PAR", "were randomly assigned to", "INT", "or", "CTRL", "."),
    ("The primary outcome was", "OUT", "at {w} weeks ."),
    ("INT", "significantly reduced", "OUT", "compared with", "CTRL", "in", "PAR", "."),
    ("Secondary outcomes included", "OUT", ",", "OUT", "and", "OUT", "."),
    ("We conducted a double-blind randomised controlled trial of", "INT", "in", "PAR", "."),
    ("After {w} weeks ,", "OUT", "had improved more with", "INT", "than with", "CTRL", "."),
    ("No significant differences in", "OUT", "were observed between the groups ."),
    ("Eligible participants were", "PAR", "."),
    ("PAR", "received", "INT", "for {w} weeks ."),
    ("Compared with", "CTRL", ",", "INT", "was associated with a lower", "OUT", "."),
    ("The effect of", "INT", "on", "OUT", "in", "PAR", "remains uncertain ."),
    ("OUT", "was assessed with a validated instrument at baseline and at {w} weeks ."),
    ("This trial evaluated whether", "INT", "improves", "OUT", "in", "PAR", "."),
)
PICO_PLAIN = (
    "Adverse events were mild and similar in both groups .",
    "Analyses followed the intention-to-treat principle .",
    "Randomisation was stratified by centre using computer-generated blocks .",
    "Participants and outcome assessors were blinded to group allocation .",
    "The trial was registered before enrolment of the first participant .",
)


def pico_phrase(rng: random.Random, slot: str) -> list[tuple[str, str]]:
    """(text, tag) pieces of one PICO element; the inconsistencies imitate human annotators."""
    if slot == "PAR":
        pieces = []
        if rng.random() < 0.6:
            count = str(rng.randint(40, 480))
            pieces.append((count, "I-PAR" if rng.random() < 0.6 else "O"))
        text = f"{rng.choice(POPULATIONS)} with {rng.choice(CONDITIONS)}"
        if rng.random() < 0.3:
            text += " " + rng.choice(SETTINGS)
        return [*pieces, (text, "I-PAR")]
    if slot == "INT":
        if rng.random() < 0.5:
            text = f"{rng.choice(ROUTES)} {rng.choice(TREATMENTS)} {rng.choice(TREATMENT_DOSES)}".strip()
        else:
            text = rng.choice(THERAPIES)
        return [(text, "I-INT")]
    if slot == "CTRL":
        text = rng.choice(CONTROLS)
        return [(text, "I-INT" if rng.random() < 0.75 else "O")]
    pieces = []
    if rng.random() < 0.25:
        pieces.append(("change in", "I-OUT" if rng.random() < 0.5 else "O"))
    return [*pieces, (rng.choice(OUTCOMES), "I-OUT")]


def pico_sentence(rng: random.Random) -> tuple[list[str], list[str]]:
    if rng.random() < 0.1:
        tokens = rng.choice(PICO_PLAIN).split()
        return tokens, ["O"] * len(tokens)
    slots = common_slots(rng)
    tokens: list[str] = []
    tags: list[str] = []
    for item in rng.choice(PICO_TEMPLATES):
        pieces = pico_phrase(rng, item) if item in ("PAR", "INT", "CTRL", "OUT") else [(fill(rng, item, **slots), "O")]
        for text, tag in pieces:
            words = text.split()
            tokens += words
            tags += [tag] * len(words)
    tokens[0] = capitalise(tokens[0])
    return tokens, tags


def pico_example(rng: random.Random, split: str) -> tuple[str | None, dict]:
    tokens, tags = pico_sentence(rng)
    key = None if set(tags) == {"O"} else " ".join(tokens)
    return key, {"document_id": "", "tokens": tokens, "tags": tags}


# --- relations: ChemProt-like, both arguments dummified --------------------------------------------

RELATION_TEMPLATES = {
    "CPR:4": (
        "{CHEM} inhibited {GENE} activity in a concentration-dependent manner (IC50 = {n} microM).",
        "{CHEM} is a potent and selective inhibitor of {GENE}.",
        "Treatment with {CHEM} suppressed {GENE} expression in {cells}.",
        "{GENE} activity was markedly reduced by {CHEM}.",
        "{CHEM} blocked {GENE}-mediated signaling without affecting {G2}.",
        "{CHEM} down-regulated the expression of {GENE} at both the mRNA and protein levels.",
        "In {cells}, {CHEM} decreased the phosphorylation of {GENE}.",
        "The inhibition of {GENE} by {CHEM} was reversible.",
        "{CHEM} inhibited {GENE} but did not change the expression of {G2}.",
        "Unlike {C2}, {CHEM} reduced {GENE} protein levels in {cells}.",
        # dev/test only
        "{CHEM} attenuated {GENE} activity in {cells}.",
    ),
    "CPR:3": (
        "{CHEM} significantly increased {GENE} expression in {cells}.",
        "{CHEM} activates {GENE} through a mechanism that requires {G2}.",
        "Exposure to {CHEM} up-regulated {GENE} mRNA levels {n}-fold.",
        "{GENE} was induced by {CHEM} in a time-dependent manner.",
        "{CHEM} enhanced the phosphorylation of {GENE} in {cells}.",
        "{CHEM} stimulated {GENE} activity, an effect reversed by {C2}.",
        "The induction of {GENE} by {CHEM} was abolished by {C2}.",
        "{CHEM}, but not {C2}, increased {GENE} activity in {cells}.",
        # dev/test only
        "{CHEM} elevated {GENE} protein levels in {cells}.",
    ),
    "CPR:9": (
        "{CHEM} is metabolized mainly by {GENE} in human liver microsomes.",
        "{GENE} catalyzes the conversion of {CHEM} to its active metabolite.",
        "{CHEM} is a substrate of {GENE}, which limits its oral bioavailability.",
        "The hydroxylation of {CHEM} was mediated by {GENE}.",
        "Recombinant {GENE} converted {C2} into {CHEM}.",
        "{GENE} is responsible for the glucuronidation of {CHEM}.",
        # dev/test only
        "{CHEM} is cleared by {GENE}-dependent oxidation.",
    ),
    "false": (
        "{CHEM} did not affect {GENE} expression in {cells}.",
        "The effects of {CHEM} on cell viability were independent of {GENE} status.",
        "Serum {CHEM} and {GENE} levels were measured at baseline and after {n} weeks.",
        "{CHEM} inhibited {G2}, whereas {GENE} expression was unchanged.",
        "Patients were genotyped for {GENE} polymorphisms before receiving {CHEM}.",
        "{CHEM} was obtained from Sigma, and the antibody against {GENE} from Abcam.",
        "Both {CHEM} and {GENE} have been implicated in the pathogenesis of {D}.",
        "{GENE} knockdown enhanced the cytotoxicity of {CHEM} in {cells}.",
        "{C2} increased {GENE} expression, but {CHEM} had no such effect.",
        "{CHEM} had no significant effect on {GENE} activity at concentrations up to {n} microM.",
        "Whether {CHEM} interacts with {GENE} in vivo remains to be determined.",
        "{C2} inhibited {GENE} activity, and {CHEM} was used as a positive control.",
        "{CHEM} increased {G2} expression in {cells} lacking {GENE}.",
        "{CHEM} failed to inhibit {GENE} even at high concentrations.",
        # dev/test only
        "{GENE} expression was not altered by {CHEM} treatment.",
    ),
}
RELATION_LEADS = (
    "",
    "",
    "In vitro, ",
    "In {cells}, ",
    "As expected, ",
    "Moreover, ",
    "In {species}, ",
    "Consistent with previous reports, ",
    "Notably, ",
    "In the present study, ",
)
RELATION_WEIGHTS = {"CPR:4": 0.25, "CPR:3": 0.16, "CPR:9": 0.14, "false": 0.45}
CHEMICAL_MASK, GENE_MASK = "@CHEMICAL$", "@GENE$"


def relation_sentence(rng: random.Random, split: str = "train") -> tuple[str, str]:
    """A masked sentence and its label.

    The last template of each label is kept out of training (dev/test use it a quarter of the time),
    so a model must generalise from the verb; 5% of labels are flipped, as annotation noise. Lead-ins
    vary the sentences, so that the de-duplication of texts does not starve templates without slots.
    """
    labels = list(RELATION_WEIGHTS)
    label = rng.choices(labels, weights=[RELATION_WEIGHTS[name] for name in labels])[0]
    templates = RELATION_TEMPLATES[label]
    template = templates[-1] if split != "train" and rng.random() < 0.25 else rng.choice(templates[:-1])
    slots = common_slots(rng)
    slots.update(
        CHEM=lambda: CHEMICAL_MASK, GENE=lambda: GENE_MASK, C2=lambda: chemical(rng), G2=lambda: rng.choice(GENES)
    )
    leads = [lead for lead in RELATION_LEADS if "{" not in lead] if "{cells}" in template else RELATION_LEADS
    lead = "" if template.startswith("In ") else rng.choice(leads)
    if lead and not template.startswith(("{", "@")):
        template = template[0].lower() + template[1:]
    text = capitalise(fill(rng, lead + template, **slots))
    if rng.random() < 0.05:
        label = rng.choice([name for name in labels if name != label])
    return text, label


def relation_example(rng: random.Random, split: str) -> tuple[str | None, dict]:
    text, label = relation_sentence(rng, split)
    head = text.index(CHEMICAL_MASK)
    tail = text.index(GENE_MASK)
    return text, {
        "text": text,
        "head": {"start": head, "end": head + len(CHEMICAL_MASK), "type": "CHEMICAL"},
        "tail": {"start": tail, "end": tail + len(GENE_MASK), "type": "GENE"},
        "label": label,
    }


# --- sentence similarity: paraphrase level plus annotator noise -------------------------------------

SIMILARITY_SUBJECTS = GENES[:24] + CHEMICALS[:24]
PROCESSES = (
    "apoptosis",
    "cell proliferation",
    "cell migration",
    "insulin secretion",
    "inflammatory cytokine release",
    "autophagy",
    "angiogenesis",
    "oxidative stress",
    "lipid accumulation",
    "neuronal survival",
    "collagen deposition",
    "glucose uptake",
)
CONTEXTS = (
    "in breast cancer cells",
    "in diabetic mice",
    "in human hepatocytes",
    "in the ischemic brain",
    "in activated macrophages",
    "in lung fibroblasts",
    "in pancreatic beta cells",
    "in colorectal tumours",
)
VERBS = {
    "up": (
        ("increases", "increase", "increased"),
        ("promotes", "promote", "promoted"),
        ("enhances", "enhance", "enhanced"),
    ),
    "down": (
        ("reduces", "reduce", "reduced"),
        ("inhibits", "inhibit", "inhibited"),
        ("suppresses", "suppress", "suppressed"),
    ),
}
REALISATIONS = (
    "{S} {present} {P} {ctx}.",
    "{Ctx}, {P} is {past} by {S}.",
    "Our results show that {S} {present} {P} {ctx}.",
    "{S} was found to {base} {P} {ctx}.",
    "{Agent} {past} {P} {ctx}.",
    "We observed that {P} was {past} by {S} {ctx}.",
)
UNRELATED = (
    "Samples were stored at -80 C until analysis.",
    "The questionnaire was translated and validated in three languages.",
    "Statistical significance was set at p < 0.05.",
    "Patients were followed up for a median of five years.",
    "All experiments were performed in triplicate.",
    "The protocol was approved by the local ethics committee.",
    "Recruitment took place between 2015 and 2019.",
    "Images were analysed with ImageJ software by a blinded observer.",
    "Missing data were handled by multiple imputation.",
    "The authors declare no competing interests.",
    "Participants completed an online survey at enrolment.",
    "Sequencing libraries were prepared according to the manufacturer's instructions.",
)


def realise(rng: random.Random, fact: tuple[str, str, str, str], avoid: str = "", template: str = "") -> str:
    """One wording of ``(subject, direction, process, context)``: ``template`` or a random one, never ``avoid``."""
    subject, direction, process, context = fact
    for _ in range(20):
        present, base, past = rng.choice(VERBS[direction])
        agent = f"Treatment with {subject}" if subject in CHEMICALS else f"Overexpression of {subject}"
        text = template or rng.choice(REALISATIONS)
        if not context:
            text = text.replace(" {ctx}", "").replace("{Ctx}, ", "In these experiments, ")
        text = fill(
            rng,
            text,
            S=lambda s=subject: s,
            P=lambda: process,
            ctx=lambda: context,
            Ctx=lambda: capitalise(context),
            present=lambda p=present: p,
            base=lambda b=base: b,
            past=lambda p=past: p,
            Agent=lambda a=agent: a,
        )
        text = capitalise(text)
        if text != avoid:
            return text
        template = ""  # that wording is taken: try another
    raise AssertionError("no distinct realisation")


def similarity_pair(rng: random.Random) -> tuple[str, str, float]:
    def fact() -> tuple[str, str, str, str]:
        direction = rng.choice(("up", "down"))
        return rng.choice(SIMILARITY_SUBJECTS), direction, rng.choice(PROCESSES), rng.choice(CONTEXTS)

    def other(values: tuple[str, ...], value: str) -> str:
        return rng.choice([v for v in values if v != value])

    level = rng.randint(0, 4)
    first = fact()
    subject, direction, process, context = first
    if level == 4:
        second = first
    elif level == 3:
        second = (subject, direction, process, rng.choice(("", other(CONTEXTS, context))))
    elif level == 2:
        second = (subject, other(("up", "down"), direction), process, context)
        if rng.random() < 0.5:
            second = (subject, direction, other(PROCESSES, process), context)
    elif level == 1:
        second = (other(SIMILARITY_SUBJECTS, subject), direction, other(PROCESSES, process), context)
    else:
        second = (
            other(SIMILARITY_SUBJECTS, subject),
            rng.choice(("up", "down")),
            other(PROCESSES, process),
            other(CONTEXTS, context),
        )
    wording = rng.choice(REALISATIONS)
    text = realise(rng, first, template=wording)
    if level == 0 and rng.random() < 0.6:
        pair = rng.choice(UNRELATED)
    else:
        # close paraphrases often keep the sentence's wording, as annotated near-duplicates do
        same_wording = level >= 3 and rng.random() < 0.5
        pair = realise(rng, second, avoid=text, template=wording if same_wording else "")
    noisy = min(4.0, max(0.0, level + rng.gauss(0, 0.25)))
    return text, pair, round(round(noisy * 5) / 5, 1)


def similarity_example(rng: random.Random, split: str) -> tuple[str | None, dict]:
    text, pair, score = similarity_pair(rng)
    if rng.random() < 0.5:
        text, pair = pair, text
    return f"{text}\t{pair}", {"text": text, "text_pair": pair, "score": score}


# --- document classification: hallmark-like multi-label abstracts ----------------------------------

HALLMARK_CUES = {
    "activating invasion and metastasis": (
        (
            "Depletion of {G} impaired migration and invasion of {cancer_cells} in Transwell assays.",
            "{C} decreased MMP-9 activity and suppressed lung metastasis in nude mice.",
            "Loss of E-cadherin and gain of vimentin indicated an epithelial-mesenchymal transition.",
            "Wound-healing assays showed delayed closure in {G}-deficient cells.",
            "High {G} expression was associated with distant metastasis in {n} patients with {cancer}.",
            "{C} reduced the number of metastatic nodules in an orthotopic model.",
        ),
        ("Patients with high {G} expression more often had lymph node involvement.",),
    ),
    "genomic instability and mutation": (
        (
            "{C} caused DNA double-strand breaks, as indicated by gamma-H2AX foci.",
            "Whole-exome sequencing identified recurrent {G} mutations in {n} tumours.",
            "Defective mismatch repair was associated with microsatellite instability.",
            "Comet assays revealed extensive DNA damage after exposure to {C}.",
            "Loss of {G} led to chromosomal aberrations and aneuploidy.",
            "Impaired homologous recombination repair sensitised {cancer_cells} to PARP inhibition.",
        ),
        ("{G} status was determined by sequencing in all samples.",),
    ),
    "inducing angiogenesis": (
        (
            "{C} reduced VEGF secretion and microvessel density in xenograft tumours.",
            "Conditioned medium from {cancer_cells} stimulated tube formation by endothelial cells.",
            "{G} expression correlated with the number of CD31-positive vessels.",
            "Hypoxia-induced HIF-1alpha accumulation increased VEGF transcription.",
            "{C} inhibited endothelial sprouting in the chick chorioallantoic membrane assay.",
            "Tumours overexpressing {G} were highly vascularised.",
        ),
        ("{G} levels were higher in hypoxic regions of the tumour.",),
    ),
    "resisting cell death": (
        (
            "{C} induced apoptosis, as shown by caspase-3 cleavage and annexin V staining.",
            "Overexpression of Bcl-2 protected {cancer_cells} from {C}-induced apoptosis.",
            "TUNEL staining revealed a marked increase in apoptotic cells after treatment.",
            "Silencing {G} sensitised {cancer_cells} to TRAIL-mediated cell death.",
            "{C} triggered the release of cytochrome c and activation of caspase-9.",
            "{G} conferred resistance to anoikis in detached cells.",
        ),
        ("Cell viability decreased after 48 h of treatment with {C}.",),
    ),
    "sustaining proliferative signaling": (
        (
            "Knockdown of {G} markedly reduced proliferation and colony formation of {cancer_cells}.",
            "{C} inhibited EGF-stimulated phosphorylation of ERK1/2 and AKT.",
            "Cells overexpressing {G} showed increased BrdU incorporation and faster cell cycle progression.",
            "Activation of the MAPK pathway by {G} promoted growth of {cancer_cells}.",
            "{C} arrested {cancer_cells} in the G1 phase and reduced cyclin D1 levels.",
            "Autocrine signalling through {G} sustained mitogenic activity in serum-free medium.",
        ),
        ("Tumour growth was slower in mice treated with {C}.",),
    ),
}
HALLMARKS = tuple(sorted(HALLMARK_CUES))
DOC_BACKGROUND = (
    "{cancer} remains a leading cause of cancer-related death worldwide.",
    "The role of {G} in {cancer} is poorly understood.",
    "{C} has shown antitumour activity in several preclinical models.",
    "Novel therapeutic targets are urgently needed for {cancer}.",
)
DOC_AIM = (
    "Here we investigated the effects of {C} on {cancer} cells.",
    "This study examined whether {G} contributes to the progression of {cancer}.",
    "We aimed to characterise the function of {G} in {cancer}.",
)
DOC_METHODS = (
    "{cancer_cells} were treated with increasing concentrations of {C} for 24 to 72 h.",
    "Expression was analysed by quantitative PCR and immunohistochemistry in {n} tumour samples.",
    "Protein levels were determined by Western blotting.",
    "Xenografts were established by subcutaneous injection of {cancer_cells} into nude mice.",
)
DOC_CONCLUSION = (
    "These findings identify {G} as a potential therapeutic target in {cancer}.",
    "Together, our data support further evaluation of {C} in {cancer}.",
    "Targeting {G} may therefore benefit patients with {cancer}.",
)


def abstract_with_hallmarks(rng: random.Random) -> tuple[str, list[str]]:
    """An abstract and its hallmarks; some hallmarks are only hinted at, a few cues go unlabelled."""
    slots = common_slots(rng)
    # one cancer, one gene, one agent and one cell line per abstract, as in a real one
    gene, agent, cancer, cells = (rng.choice(v) for v in (CANCER_GENES, ANTICANCER_AGENTS, CANCERS, CANCER_CELLS))
    slots.update(G=lambda: gene, C=lambda: agent, cancer=lambda: cancer, cancer_cells=lambda: cells)
    count = rng.choices((0, 1, 2, 3), weights=(0.12, 0.45, 0.33, 0.10))[0]
    labels = sorted(rng.sample(HALLMARKS, count))
    cues = []
    for label in labels:
        strong, weak = HALLMARK_CUES[label]
        if rng.random() < 0.12:
            cues.append(rng.choice(weak))
        else:
            cues += rng.sample(strong, rng.choice((1, 1, 2)))
    if rng.random() < 0.08:
        unlabelled = [name for name in HALLMARKS if name not in labels]
        cues.append(rng.choice(HALLMARK_CUES[rng.choice(unlabelled)][0]))
    rng.shuffle(cues)
    sentences = [
        rng.choice(DOC_BACKGROUND),
        rng.choice(DOC_AIM),
        *rng.sample(DOC_METHODS, rng.choice((1, 2))),
        *cues,
        rng.choice(DOC_CONCLUSION),
    ]
    text = " ".join(capitalise(fill(rng, sentence, **slots)) for sentence in sentences)
    return text, labels


def hallmark_example(rng: random.Random, split: str) -> tuple[str | None, dict]:
    text, labels = abstract_with_hallmarks(rng)
    return text, {"text": text, "text_pair": "", "labels": labels}


# --- question answering: PubMedQA-like yes/no/maybe ---------------------------------------------------

REDUCIBLE_OUTCOMES = (
    "pain intensity",
    "glycated haemoglobin",
    "systolic blood pressure",
    "depressive symptoms",
    "length of hospital stay",
    "the rate of hospital readmission",
    "body weight",
    "fasting plasma glucose",
    "sleep onset latency",
    "the frequency of exacerbations",
)
EXPOSURES = (
    "long-term proton pump inhibitor use",
    "shift work",
    "low serum vitamin D",
    "habitual coffee consumption",
    "air pollution exposure",
    "statin use",
    "high dietary sodium intake",
    "childhood obesity",
    "sedentary behaviour",
    "short sleep duration",
)
ASSOCIATED_DISEASES = (
    "hip fracture",
    "type 2 diabetes",
    "atrial fibrillation",
    "dementia",
    "chronic kidney disease",
    "colorectal cancer",
    "stroke",
    "depression",
)
TRIAL_RESULTS = {
    "yes": (
        "{Out} decreased significantly more with {int} than with {ctrl} (p < 0.01).",
        "Compared with {ctrl}, {int} lowered {out} by {n}% (95% CI {lo} to {hi}; p = 0.00{d}).",
        "{Int} produced a significant reduction in {out} relative to {ctrl} (p = 0.0{d1}).",
    ),
    "no": (
        "{Out} did not differ between the groups (p = 0.{d5}{d}).",
        "{Int} had no significant effect on {out} compared with {ctrl} (p = 0.{d5}{d}).",
        "Changes in {out} were similar with {int} and {ctrl}.",
    ),
    "maybe": (
        "{Out} tended to be lower with {int}, but the difference was not statistically significant (p = 0.0{d6}).",
        "{Int} reduced {out} in the per-protocol analysis (p = 0.04) but not in the intention-to-treat analysis.",
        "A reduction in {out} was seen only in the subgroup with the most severe disease.",
    ),
}
COHORT_RESULTS = {
    "yes": (
        "{Exp} was associated with a higher risk of {out} (hazard ratio 1.{d5}; 95% CI 1.1{d} to 2.{d}).",
        "Participants with {exp} were more likely to develop {out} after adjustment for confounders.",
    ),
    "no": (
        "{Exp} was not associated with {out} (hazard ratio 1.0{d}; 95% CI 0.8{d} to 1.2{d}).",
        "The incidence of {out} was similar in participants with and without {exp}.",
    ),
    "maybe": (
        "The association between {exp} and {out} was attenuated and lost significance after adjustment.",
        "{Exp} was associated with {out} in women but not in men.",
    ),
}
ANSWER_WEIGHTS = {"yes": 0.55, "no": 0.33, "maybe": 0.12}


def qa_item(rng: random.Random) -> tuple[str, str, str]:
    """A question, a passage without its conclusion, and the answer its key result sentence gives."""
    answers = list(ANSWER_WEIGHTS)
    answer = rng.choices(answers, weights=[ANSWER_WEIGHTS[a] for a in answers])[0]
    estimate = [0]  # "{n}" draws a percentage; "{lo}" and "{hi}" (after it) bracket it

    def percentage() -> str:
        estimate[0] = rng.randint(10, 35)
        return str(estimate[0])

    digits = {
        "n": percentage,
        "lo": lambda: str(estimate[0] - rng.randint(3, 7)),
        "hi": lambda: str(estimate[0] + rng.randint(3, 9)),
        "d": lambda: str(rng.randint(1, 9)),
        "d1": lambda: str(rng.randint(1, 4)),
        "d5": lambda: str(rng.randint(3, 9)),
        "d6": lambda: str(rng.randint(6, 9)),
    }
    if rng.random() < 0.6:
        table = TRIAL_RESULTS
        intervention = rng.choice(TREATMENTS + THERAPIES)
        control = rng.choice(CONTROLS[:3])
        population, condition = rng.choice(POPULATIONS), rng.choice(CONDITIONS)
        asked, distractor = rng.sample(REDUCIBLE_OUTCOMES, 2)
        slots = dict(digits, int=lambda: intervention, Int=lambda: capitalise(intervention), ctrl=lambda: control)
        question = f"Does {intervention} reduce {asked} in {population} with {condition}?"
        opening = [
            rng.choice(
                (
                    f"{capitalise(condition)} is common and current treatments have limited efficacy.",
                    f"Few trials have evaluated {intervention} in {population} with {condition}.",
                )
            ),
            f"In this randomised trial, {rng.randint(40, 600)} {population} with {condition} received "
            f"{intervention} or {control} for {rng.choice((8, 12, 24, 52))} weeks.",
        ]
    else:
        table = COHORT_RESULTS
        exposure = rng.choice(EXPOSURES)
        asked, distractor = rng.sample(ASSOCIATED_DISEASES, 2)
        slots = dict(digits, exp=lambda: exposure, Exp=lambda: capitalise(exposure))
        question = f"Is {exposure} associated with an increased risk of {asked}?"
        opening = [
            f"The relation between {exposure} and {asked} is debated.",
            f"We analysed {rng.randint(2, 90) * 1000} participants of a prospective cohort followed for a median of "
            f"{rng.randint(4, 15)} years.",
        ]
    # the key result answers the question; the distractor reports another outcome in other words
    key_template = rng.choice(table[answer])
    distractor_template = rng.choice([t for t in table[rng.choice(answers)] if t != key_template])
    findings = [
        fill(rng, template, **slots, out=lambda o=outcome: o, Out=lambda o=outcome: capitalise(o))
        for template, outcome in ((key_template, asked), (distractor_template, distractor))
    ]
    if rng.random() < 0.4:
        findings.pop()  # no distractor
    elif rng.random() < 0.3:
        findings.reverse()  # the distractor comes first
    closing = ["Adverse events were similar in both groups."] if "trial" in opening[1] and rng.random() < 0.5 else []
    passage = " ".join(opening + findings + closing)
    if rng.random() < 0.05:
        answer = rng.choice([a for a in answers if a != answer])
    return question, passage, answer


def qa_example(rng: random.Random, split: str) -> tuple[str | None, dict]:
    question, passage, answer = qa_item(rng)
    return f"{question}\t{passage}", {"text": question, "text_pair": passage, "labels": [answer]}


# --- writing -----------------------------------------------------------------------------------------

MAKERS: dict[str, Callable[[random.Random, str], tuple[str | None, dict]]] = {
    "demo-ner": ner_example,
    "demo-pico": pico_example,
    "demo-relation": relation_example,
    "demo-similarity": similarity_example,
    "demo-doc-classification": hallmark_example,
    "demo-qa": qa_example,
}
SENTENCES_PER_DOCUMENT = {"demo-ner": 6, "demo-pico": 5}


def make_split(slug: str, split: str, count: int, seen: set[str]) -> list[dict]:
    """``count`` examples; a text already used in any split of the dataset is drawn again."""
    rng = split_rng(slug, split)
    rows: list[dict] = []
    for _ in range(count * 50):
        if len(rows) == count:
            break
        key, row = MAKERS[slug](rng, split)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        index = len(rows)
        example = {"id": f"{slug}-{split}-{index:04d}"}
        if "document_id" in row:
            row["document_id"] = f"{slug}-{split}-doc-{index // SENTENCES_PER_DOCUMENT[slug]:03d}"
        rows.append(example | row)
    if len(rows) != count:
        raise AssertionError(f"{slug} {split}: could only make {len(rows)} distinct examples of {count}")
    return rows


def corpus_documents() -> list[str]:
    """Invented abstracts for demo pretraining, drawn with their own seed from the same generators."""
    rng = split_rng("corpus", "all")
    documents = [CORPUS_HEADER]
    for index in range(CORPUS_DOCUMENTS):
        kind = index % 3
        if kind == 0:
            documents.append(abstract_with_hallmarks(rng)[0])
            continue
        if kind == 1:
            sentences = [detokenise(ner_sentence(rng, "train")[0]) for _ in range(rng.randint(3, 5))]
            for _ in range(rng.randint(2, 3)):
                text, label = relation_sentence(rng)
                gene = rng.choice(ENZYMES if label == "CPR:9" else GENES)
                text = text.replace(CHEMICAL_MASK, chemical(rng)).replace(GENE_MASK, gene)
                sentences.append(text)
        else:
            sentences = [detokenise(pico_sentence(rng)[0]) for _ in range(rng.randint(2, 4))]
            sentences.append(qa_item(rng)[1])
        documents.append(" ".join(capitalise(sentence) for sentence in sentences))
    return documents


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def generate(directory: Path = HERE) -> list[Path]:
    """Write every demo file under ``directory``; return the paths written."""
    written = []
    for slug, sizes in SIZES.items():
        (directory / slug).mkdir(parents=True, exist_ok=True)
        seen: set[str] = set()
        for split, count in zip(SPLITS, sizes, strict=True):
            path = directory / slug / f"{split}.jsonl"
            write_jsonl(path, make_split(slug, split, count, seen))
            written.append(path)
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(corpus_documents()) + "\n", encoding="utf-8", newline="\n")
    written.append(corpus)
    return written


if __name__ == "__main__":
    for written_path in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(written_path)
