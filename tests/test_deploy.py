"""The deployment examples under deploy/: Kubernetes manifests valid against the Kubernetes
schemas, every command line they run accepted by the real CLI, grace periods that let a
worker hand its job back, the AWS Batch definitions valid against the Batch API, the systemd
unit verified by systemd, and one list of system packages for setup.sh and the image."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import botocore.session
import click
import kubernetes_validate
import pytest
import yaml
from botocore.validate import validate_parameters

from bucketdigest.cli.main import cli
from bucketdigest.monitor.gauges import QueueGauges
from bucketdigest.shared.stores.local import LocalStore

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
KUBERNETES_VERSION = "1.30.0"


def _manifests() -> list[dict[str, Any]]:
    return [
        document
        for path in sorted((DEPLOY / "kubernetes").glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if document
    ]


def _accepted_by_the_cli(args: list[str]) -> click.Context:
    """Parse ``args`` as ``bucketdigest`` would (an unknown option or bad value raises),
    leaving this process's logging as it was (``--log-format`` applies while parsing)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        command = cli.commands[args[0]]
        return command.make_context(args[0], list(args[1:]))
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _grace(args: list[str]) -> float:
    return float(args[args.index("--grace") + 1])


def test_kubernetes_manifests_are_valid_against_the_kubernetes_schemas() -> None:
    builtin = [m for m in _manifests() if not m["apiVersion"].startswith("keda.sh/")]
    assert {m["kind"] for m in builtin} >= {"Job", "Deployment", "Secret", "ServiceAccount"}
    for manifest in builtin:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def test_every_container_runs_a_command_line_the_cli_accepts_with_room_to_hand_back() -> None:
    pods = [
        m["spec"]["template"]["spec"] for m in _manifests() if m["kind"] in ("Job", "Deployment")
    ]
    assert len(pods) == 3
    for pod in pods:
        for container in pod["containers"]:
            args = container["args"]
            _accepted_by_the_cli(args)
            if args[0] == "work":
                assert _grace(args) < pod["terminationGracePeriodSeconds"]


def test_keda_scales_the_worker_deployment_on_a_gauge_the_monitor_exports(
    tmp_path: Path,
) -> None:
    (scaled,) = [m for m in _manifests() if m["kind"] == "ScaledObject"]
    deployments = {m["metadata"]["name"] for m in _manifests() if m["kind"] == "Deployment"}
    assert scaled["spec"]["scaleTargetRef"]["name"] in deployments
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus"
    exported = {family.name for family in QueueGauges(LocalStore(tmp_path)).collect()}
    queried = set(re.findall(r"bucketdigest_[a-z_]+", trigger["metadata"]["query"]))
    assert queried and queried <= exported


def test_aws_batch_definitions_are_valid_requests_running_workers_until_idle() -> None:
    model = botocore.session.get_session().get_service_model("batch")
    definition = json.loads((DEPLOY / "aws-batch" / "job-definition.json").read_text())
    validate_parameters(definition, model.operation_model("RegisterJobDefinition").input_shape)
    submit = json.loads((DEPLOY / "aws-batch" / "submit-job.json").read_text())
    validate_parameters(submit, model.operation_model("SubmitJob").input_shape)
    assert submit["jobDefinition"] == definition["jobDefinitionName"]
    command = definition["containerProperties"]["command"]
    _accepted_by_the_cli(command)
    assert "--exit-when-idle" in command


def test_the_systemd_unit_verifies_and_hands_back_on_stop(tmp_path: Path) -> None:
    unit = (DEPLOY / "systemd" / "bucketdigest-worker.service").read_text()
    settings = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and line[0] != "#"
    )
    program, *args = settings["ExecStart"].split()
    assert program.endswith("/bucketdigest")
    _accepted_by_the_cli(args)
    assert settings["KillSignal"] == "SIGTERM"
    assert _grace(args) < float(settings["TimeoutStopSec"])
    assert settings["Restart"] == "on-failure"
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    checked = tmp_path / "bucketdigest-worker.service"
    checked.write_text(unit.replace(program, shutil.which("true") or "/bin/true"))
    verify = subprocess.run(
        ["systemd-analyze", "verify", str(checked)], capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stderr


def test_the_image_and_setup_install_from_one_list_of_system_packages() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    listing = (ROOT / "scripts" / "system-packages.txt").read_text()
    rows = [line.split() for line in listing.splitlines() if line and not line.startswith("#")]
    assert {row[2] for row in rows} == {"runtime", "test"}
    assert {"git-lfs", "tesseract-ocr"} <= {row[1] for row in rows if row[2] == "runtime"}
    for text in (dockerfile, setup):
        assert "scripts/system-packages.txt" in text
        assert "scripts/torch-cpu.txt" in text
    assert "apt-get install" not in re.sub(r"(?s)awk.*?xargs apt-get install", "", dockerfile)
    libraries = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for command, *_ in rows:
        if command.startswith("lib:"):
            library = command.removeprefix("lib:")
            assert f"{library} " in libraries, f"{library} is listed but not installed here"
        else:
            assert shutil.which(command), f"{command} is listed but not installed here"
    pyproject = (ROOT / "pyproject.toml").read_text()
    folders = set(re.findall(r'^"bucketdigest\.\w+" = "(\w+)"$', pyproject, re.MULTILINE))
    assert folders == set(re.findall(r"^COPY (\w+) \1$", dockerfile, re.MULTILINE))
    entrypoint = json.loads(re.search(r"^ENTRYPOINT (.+)$", dockerfile, re.MULTILINE)[1])
    command = json.loads(re.search(r"^CMD (.+)$", dockerfile, re.MULTILINE)[1])
    assert entrypoint == ["bucketdigest"]
    _accepted_by_the_cli(command)
    assert re.search(r"^USER bucketdigest$", dockerfile, re.MULTILINE)
