"""Shared fixtures: the plugin registry synced once per session, the usual personas, the official files;
and two habits: the ``backend`` marker (CI's second pass) and every test's durations in var/test-durations.txt.

alice submits models, bob is another user, staff administers (healthchecks' habit).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from official_data import OfficialData

pytest_plugins = ["biolm.testing"]  # the plugin authors' kit: register_plugin and friends

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The platform's own tests were written for one fine-tuning job per dataset, the path a protocol of one
# training (a preview, the demo) still takes; the sliced graph that production queues for more
# (jobs/graph.py) has its own tests, which turn this on (tests/test_sliced_protocol_jobs.py).
os.environ.setdefault("BIOLM_SLICE_PROTOCOLS", "0")
# Several test processes (make test's -n 2) share the cores: each one's torch, and every engine, worker
# or site a test starts, gets its share of them, not all. Oversubscribed, OpenMP's threads spin against
# each other's: with two other busy processes on two cores, 30 steps of a small pretraining run took
# 26 s on two threads and 8 s on one (same loss). Set before torch loads (the platform never imports it).
_TEST_PROCESSES = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _TEST_PROCESSES > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _TEST_PROCESSES)))


def load_session_rows() -> None:
    """The built-in plugins' rows (only: installed ones would make tests depend on the machine) and BLURB-mini's
    demo datasets imported, as ``make demo`` does: a submission names only imported data, so BLURB-mini is
    the benchmark that can run here (BLURB's official files are not imported)."""
    from biolm.plugins import collect_contributions, get_plugin_manager
    from registry.imports import import_dataset
    from registry.models import Benchmark
    from registry.sync import sync_contributions

    report = sync_contributions(collect_contributions(get_plugin_manager(load_entrypoints=False)))
    assert not report.problems, report.problems
    for slug in dict.fromkeys(Benchmark.objects.get(slug="blurb-mini").entries.values_list("dataset__slug", flat=True)):
        import_dataset(slug)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The session's rows, loaded once (:func:`load_session_rows`); every test's transaction rolls back to them."""
    with django_db_blocker.unblock():
        load_session_rows()


@pytest.fixture
def score_job(alice):
    """A ``score`` job on the ``cpu`` queue for demo-ner, waiting: what a platform job's tests claim and run."""
    from contract_documents import finetune_spec, score_spec
    from web_fixture import sync_builtin_plugins

    from jobs.models import Job
    from registry.models import Dataset, LanguageModel
    from submissions.models import Submission

    sync_builtin_plugins()  # a transactional test before this one flushed the built-in rows
    model = LanguageModel.objects.create(slug="m", name="m", owner=alice)
    submission = Submission.objects.create(submitter=alice, language_model=model)
    spec = score_spec(finetune_spec("demo-ner"), 1).to_json()
    return Job.objects.create(submission=submission, language_model=model, dataset=Dataset.objects.get(slug="demo-ner"),
                              kind=Job.Kind.SCORE, queue=Job.Queue.CPU, spec=spec)  # fmt: skip


@pytest.fixture(scope="module")
def session_rows_restored(django_db_blocker):
    """For a module of transactional tests: each ends by flushing every table, the session's rows included,
    and a test that runs after it in the same process (xdist sends whole files) would find no benchmark or
    imported dataset. Loaded again once the module's last test has flushed."""
    yield
    with django_db_blocker.unblock():
        load_session_rows()


@pytest.fixture
def session_rows(transactional_db) -> None:
    """For a transactional test: the session's rows loaded again, since the test before it flushed them."""
    load_session_rows()


@pytest.fixture(scope="session", autouse=True)
def _static_files_collected() -> None:
    """``collectstatic`` before any test, as a deployment does before serving: pages name their files through
    the manifest of hashed names (settings.STORAGES), which only collectstatic writes (tests/static_files.py:
    once per run, safe beside the other xdist worker).

    The sites that tests start in processes of their own (bench.harness, tests/security/live_site.py,
    ``manage.py demo``) serve the same files: ``STATIC_ROOT`` in the environment they inherit names them.
    """
    from django.conf import settings
    from static_files import collect_static_once

    collect_static_once()
    os.environ["STATIC_ROOT"] = str(settings.STATIC_ROOT)


@pytest.fixture(scope="session", autouse=True)
def _a_cache_of_this_pytest_process_s_own():
    """Where BIOLM_CACHE_URL names a Redis (CI's PostgreSQL pass), each pytest process uses a database of that
    Redis of its own (xdist worker gwN: the URL's number plus N), emptied when the session starts.

    Tests clear the cache (a flush of its whole Redis database) and count sign-ins, all from 127.0.0.1:
    in one shared database, one process's test would reset or add to another's counts.
    """
    url = os.environ.get("BIOLM_CACHE_URL", "")
    if not url:
        yield None
        return
    from django.core.cache import cache
    from django.test import override_settings

    base = urlsplit(url)
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    number = int(base.path.strip("/") or 0) + worker
    own = urlunsplit(base._replace(path=f"/{number}"))
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                               "LOCATION": own}}):  # fmt: skip
        cache.clear()
        yield own


@pytest.fixture(scope="session")
def official_data() -> OfficialData:
    """The official files (tests/official_data.py): ``official_data("HoC", "blurb", "train.tsv")`` is that
    path under BIOLM_DATA_DIR, and skips the test when it is absent. A test using it, even through a
    fixture, is marked ``official_data``."""
    return OfficialData()


@pytest.fixture(scope="session")
def tiny_bert_checkpoint(tmp_path_factory) -> Path:
    """A real tiny BERT checkpoint (config, safetensors weights, tokenizer) that passes the intake; built once.

    Tests read it and copy it, never change it.
    """
    from checkpoints import tiny_bert

    folder = tmp_path_factory.mktemp("checkpoints") / "tiny-bert"
    return tiny_bert(folder, ["aspirin inhibits cyclooxygenase in platelets"] * 5, 120)


@pytest.fixture
def artefact_store(settings, tmp_path) -> Path:
    """A platform of the test's own: ``BIOLM_VAR_DIR`` and the artefact store under ``tmp_path``."""
    settings.BIOLM_VAR_DIR = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "store"},
        },
    }
    return tmp_path


@pytest.fixture
def against_postgres(platform):
    """Fault tests run against PostgreSQL, as production does (CI's first pass); ``platform`` is the module's."""
    from bench.harness import POSTGRES_ONLY

    if not platform.postgres:
        pytest.skip(POSTGRES_ONLY)


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.org", "alice-password-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.org", "bob-password-123")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", "staff@example.org", "staff-password-123", is_staff=True)


# CI's second pass (`.ci/run`: `make test-backend`, on the embedded defaults) runs only the tests marked
# `backend`, those that can reach the database or the broker. A test that uses the database (the
# django_db marker, or one of these fixtures) is marked here; a module whose tests start platform
# processes or run manage.py without a database fixture says so itself (`pytestmark`). Everything
# else tests Django-free code (import-linter proves that the engine, pretraining, readers and
# plugins never import Django), which the first pass already ran. A backend test marked `once` (every
# browser test, and heavy ones whose subject is not the database) runs in the first pass only: the
# second pass's Django-client page tests still render every page on SQLite.
DATABASE_FIXTURES = {"db", "transactional_db", "client", "admin_client", "django_user_model", "settings", "live_server",
                     "alice", "bob", "staff"}  # fmt: skip
DURATIONS = "var/test-durations.txt"
DURATIONS_HEADER = "# seconds, phase, test: each test's latest run, slowest first (tests/conftest.py)"


def uses_the_database(item: pytest.Item) -> bool:
    """Marked django_db, or asks for a fixture that needs the database (directly or through another fixture)."""
    fixtures = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(DATABASE_FIXTURES & fixtures)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the markers must be there when it does
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "official_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.official_data)
        if uses_the_database(item):
            item.add_marker(pytest.mark.backend)
        if item.get_closest_marker("browser") is not None:  # a page looks the same on either database
            item.add_marker(pytest.mark.once)


@pytest.hookimpl(trylast=True)  # after pytest's own --durations list, which the terminal keeps
def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """Write every test phase's duration to var/test-durations.txt, slowest first, for finding what to mark slow.

    A run replaces the lines of the tests it ran and keeps the others', so `make test`'s two pytest
    runs (or one module run again) leave one file with each test's latest times; lines of test files
    that no longer exist are dropped. Under xdist the controller writes it: it receives every report.
    """
    if hasattr(config, "workerinput"):
        return
    fastest = 0.005 if config.option.durations_min is None else config.option.durations_min  # as --durations hides
    measured = {
        (report.nodeid, report.when): report.duration
        for reports in terminalreporter.stats.values()
        for report in reports
        if isinstance(report, pytest.TestReport) and report.duration >= fastest
    }
    if not measured:
        return
    path = config.rootpath / DURATIONS
    kept = {
        key: seconds
        for key, seconds in read_durations(path).items()
        if (config.rootpath / key[0].split("::")[0]).is_file()
    }
    slowest_first = sorted((kept | measured).items(), key=lambda pair: -pair[1])
    lines = [f"{seconds:.2f}s {when:<8} {nodeid}" for (nodeid, when), seconds in slowest_first]
    path.parent.mkdir(exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}")  # then renamed: a concurrent reader never sees half
    partial.write_text("\n".join([DURATIONS_HEADER, *lines, ""]), encoding="utf-8")
    os.replace(partial, path)
    terminalreporter.write_line(f"every test's durations: {DURATIONS}")


def read_durations(path: Path) -> dict[tuple[str, str], float]:
    """The lines :func:`pytest_terminal_summary` wrote, as {(node id, phase): seconds}; none if there is no file."""
    if not path.is_file():
        return {}
    durations = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            seconds, when, nodeid = line.split(maxsplit=2)
            durations[(nodeid, when)] = float(seconds.removesuffix("s"))
    return durations
