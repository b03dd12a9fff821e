"""The repository's contract: layout, deployment file, documented settings, README commands, documented slugs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_platform_is_a_source_root_not_a_package_so_the_stdlib_platform_module_still_works():
    assert not (ROOT / "platform" / "__init__.py").exists()
    import platform

    assert Path(platform.__file__).parent == Path(sys.modules["os"].__file__).parent
    assert platform.python_version().startswith("3.")


def test_the_engine_loads_no_django_in_a_fresh_process():
    code = (
        "import sys; import workers.engine.finetune, workers.engine.__main__; "
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))"
    )
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env |= {"PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_django_project_is_a_package_of_its_own_beside_the_core():
    core = ROOT / "platform" / "biolm"
    assert not any((core / f"{name}.py").exists() for name in ("settings", "urls", "wsgi", "asgi", "celery", "env"))
    assert all((ROOT / "platform" / "biolm_site" / f"{name}.py").exists() for name in ("settings", "urls", "celery"))


def test_the_layering_contracts_are_declared_and_kept():
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    sources: dict[tuple, set] = {}
    for contract in contracts:
        if contract["type"] == "forbidden":
            sources.setdefault(tuple(contract["source_modules"]), set()).update(contract["forbidden_modules"])
    assert {"django", "registry", "leaderboard", "plugins", "workers"} <= sources[("biolm",)]
    assert {"django", "plugins", "registry", "leaderboard", "jobs", "submissions"} <= sources[("workers.engine",)]
    assert {"django", "workers", "registry", "leaderboard"} <= sources[("plugins",)]
    apps = ("biolm_site", "registry", "leaderboard", "jobs", "submissions", "accounts")
    assert sources[apps] == {"workers.engine"}  # only the modules the contract names import the engine
    (layers,) = [contract["layers"] for contract in contracts if contract["type"] == "layers"]
    assert layers[1:4] == ["submissions", "leaderboard", "jobs"] and layers[-1] == "biolm_site.api"
    assert len(contracts) >= 9
    linter = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}"}
    result = subprocess.run([str(linter)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout


def compose_services() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_compose_has_the_services_of_a_real_deployment():
    services = compose_services()
    assert {"postgres", "redis", "web", "worker-gpu", "worker-cpu", "beat"} <= set(services)
    gpu = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]
    assert "workers.runner" in services["worker-gpu"]["command"]
    assert "cpu" in services["worker-cpu"]["command"]


def test_compose_serves_the_workers_internal_api_from_gunicorn_processes_of_its_own():
    services = compose_services()
    internal, web = services["internal-api"], services["web"]
    assert "--bind 0.0.0.0:8001" in internal["command"] and "8001:8001" in internal["ports"]
    assert services["worker-gpu"]["environment"]["BIOLM_API_URL"] == "http://internal-api:8001/internal/"
    assert int(internal["cpu_shares"]) < int(web.get("cpu_shares", 1024))  # readers' pages first on a busy host


def test_the_compose_gpu_worker_has_no_database_credentials():
    gpu = compose_services()["worker-gpu"]
    assert "env_file" not in gpu and "<<" not in gpu
    assert not any("DATABASE" in key or "POSTGRES" in key for key in gpu.get("environment", {}))
    assert "BIOLM_API_URL" in gpu["environment"]


def every_environment_value(services: dict) -> list[tuple[str, str, str]]:
    return [(name, key, str(value)) for name, service in services.items()
            for key, value in (service.get("environment") or {}).items()]  # fmt: skip


def test_compose_redis_asks_for_a_password_that_every_redis_url_carries_and_remote_hosts_reach_it():
    services = compose_services()
    assert "--requirepass" in services["redis"]["command"]
    assert "REDISCLI_AUTH" in str(services["redis"]["healthcheck"]["test"])  # the health check authenticates
    urls = [(name, key, value) for name, key, value in every_environment_value(services) if "redis://" in value]
    assert {name for name, _, _ in urls} >= {"web", "worker-gpu", "worker-cpu", "beat"}
    assert all(value.startswith("redis://:${REDIS_PASSWORD:?") for _, _, value in urls), urls
    published = {port for service in services.values() for port in service.get("ports", [])}
    assert {"6379:6379", "8001:8001", "9000:9000"} <= published  # the broker, the internal API, the object store


def test_a_gpu_host_compose_file_runs_only_gpu_workers_on_three_settings_and_no_database():
    host = yaml.safe_load((ROOT / "docker-compose.gpu-host.yml").read_text())["services"]
    main = compose_services()["worker-gpu"]
    assert set(host) == {"worker-gpu"}
    worker = host["worker-gpu"]
    required = {key for key, value in worker["environment"].items() if ":?" in str(value)}
    assert required == {"CELERY_BROKER_URL", "BIOLM_API_URL", "BIOLM_WORKER_SECRET"}
    assert not any("DATABASE" in key or "POSTGRES" in key or "S3" in key for key in worker["environment"])
    assert "env_file" not in worker and "depends_on" not in worker  # nothing of the web host's runs here
    for same in ("command", "healthcheck", "deploy", "restart"):
        assert worker[same] == main[same], same  # the same worker as the main compose file's


def test_every_compose_command_refers_to_something_that_exists():
    from django.core.management import get_commands

    commands = get_commands()
    services = compose_services()
    for name in ("web", "internal-api", "worker-gpu", "worker-cpu", "beat"):
        command = services[name]["command"]
        text = command if isinstance(command, str) else shlex.join(command)
        for management_command in re.findall(r"manage\.py (\w+)", text):
            assert management_command in commands, (name, management_command)
        for module in re.findall(r"gunicorn ([\w.]+):application", text):
            assert (ROOT / "platform" / (module.replace(".", "/") + ".py")).exists(), (name, module)
        for app in re.findall(r"celery -A (\w+)|\"-A\", \"(\w+)\"|'-A' (\w+)", text):
            app_name = next(a for a in app if a)
            assert (ROOT / "platform" / app_name / "celery.py").exists(), (name, app_name)
        for module in re.findall(r"-m\W+([\w.]+)", text):
            assert (ROOT / (module.replace(".", "/") + "/__main__.py")).exists(), (name, module)
        if services[name].get("build") or "build" in str(services[name]):
            assert (ROOT / "Dockerfile").exists()
    from django.conf import settings

    assert settings.CELERY_TASK_DEFAULT_QUEUE in {"cpu", "gpu"}


def test_every_long_running_compose_service_restarts_and_has_a_health_check_that_refers_to_something_real():
    from django.core.management import get_commands

    services = compose_services()
    for name, service in services.items():
        if name == "minio-bucket":  # a one-shot: it creates the bucket and exits
            continue
        assert service.get("restart"), name  # YAML merges the app anchor's policy into its services
        if name == "beat":  # its liveness is the CPU worker's tick, which worker-cpu's check reads
            continue
        test = service["healthcheck"]["test"]
        text = test if isinstance(test, str) else shlex.join(test)
        for management_command in re.findall(r"manage\.py (\w+)", text):
            assert management_command in get_commands(), (name, management_command)
        for module in re.findall(r"-m\W+([\w.]+)", text):
            assert (ROOT / (module.replace(".", "/") + ".py")).exists(), (name, module)
        if "/healthz" in text:
            assert "healthz" in (ROOT / "platform" / "biolm_site" / "urls.py").read_text()
    assert services["worker-gpu"]["restart"].startswith("on-failure:")  # a host whose workers all fail stops


def test_every_environment_variable_read_by_settings_is_documented_in_env_example():
    read = set()
    for path in (ROOT / "platform").rglob("*.py"):
        read |= set(re.findall(r"env_(?:str|bool|int|list|json_object)\(\s*\"([A-Z_]+)\"", path.read_text()))
    documented = set(re.findall(r"^([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert read, "no settings found"
    assert read <= documented, sorted(read - documented)


def test_readme_opens_with_the_demo_and_test_commands_and_ci_runs_the_test_command():
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```(?:sh|bash)?\n(.*?)```", readme, re.S).group(1)
    assert [line.strip() for line in first_block.strip().splitlines() if not line.startswith("#")] == [
        "make demo",
        "make test",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci


def test_the_benchmarks_page_documents_every_benchmark_and_dataset_slug():
    from biolm.plugins import collect_contributions, get_plugin_manager

    page = (ROOT / "docs" / "benchmarks.md").read_text()
    contributions = collect_contributions(get_plugin_manager(load_entrypoints=False))
    for slug in [*contributions.benchmarks, *contributions.datasets]:
        assert f"`{slug}`" in page, f"docs/benchmarks.md does not name {slug}"
