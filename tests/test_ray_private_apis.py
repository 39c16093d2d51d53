"""Every Ray private API raysweep uses, one test each, named after it: a Ray release that changes what raysweep
relies on of it (the name, the signature, the attribute, the behaviour) fails that test, before a sweep does.

The inventory is ``raysweep.runtime``'s docstring; the last tests check it against the source (a new private use
must be listed, and get its test here) and that every use lives in ``raysweep/runtime``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pickle
import re
import socket
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import raysweep.runtime
from raysweep.runtime import cluster, ray_logs

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("raysweep", "trainers", "analysis")
RUNTIME = ("raysweep", "runtime")  # Ray's wing, where every private use lives


def parameters(fn: Callable) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def required_parameters(fn: Callable) -> list[str]:
    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.name != "self" and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def without_spaces(text: str) -> str:
    return re.sub(r"\s+", "", text)


def global_node() -> None:
    import ray._private.worker as worker
    from ray._private.node import Node

    assert hasattr(worker, "_global_node")  # None until ray.init, then this process's Node
    assert required_parameters(Node.get_session_dir_path) == []
    assert required_parameters(Node.get_logs_dir_path) == []


def global_worker() -> None:
    from ray._private.node import Node
    from ray._private.worker import Worker, global_worker

    assert isinstance(global_worker, Worker)
    assert "node" in vars(global_worker)  # None until ray.init, then this process's Node
    assert isinstance(inspect.getattr_static(Node, "webui_url"), property)


def ray_constants(monkeypatch) -> None:
    from ray._private import ray_constants

    # cluster.private_local_ray sets this variable by its name; reread_ray_settings recomputes the constant as Ray
    # does, and Ray's services read it from the module at each use (so the recomputed value reaches them).
    assert ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR == cluster.PRIVATE_SETTINGS[0]
    rule = "ENABLE_RAY_CLUSTER=env_bool(ENABLE_RAY_CLUSTERS_ENV_VAR,notIS_WINDOWS_OR_OSX,)"
    assert rule in without_spaces(inspect.getsource(ray_constants))
    assert "ray_constants.ENABLE_RAY_CLUSTER" in inspect.getsource(importlib.import_module("ray._private.services"))
    monkeypatch.setenv("RAYSWEEP_TEST_SETTING", "0")
    assert ray_constants.env_bool("RAYSWEEP_TEST_SETTING", True) is False
    monkeypatch.setenv("RAYSWEEP_TEST_SETTING", "7")
    assert ray_constants.env_integer("RAYSWEEP_TEST_SETTING", 1) == 7  # torch_backend's shutdown timeout


def raylet_config(monkeypatch) -> None:
    from ray._raylet import AuthenticationMode, Config, get_authentication_mode

    # Config.initialize("") makes this process's Ray read RAY_AUTH_MODE again (cluster.reread_ray_settings)
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    Config.initialize("")
    assert get_authentication_mode() == AuthenticationMode.TOKEN
    monkeypatch.delenv("RAY_AUTH_MODE")
    Config.initialize("")
    assert get_authentication_mode() != AuthenticationMode.TOKEN


def token_loader() -> None:
    from ray._raylet import AuthenticationTokenLoader

    loader = AuthenticationTokenLoader.instance()  # a handle on the process's one loader, which Ray's own reads use
    loader.reset_cache()
    assert isinstance(loader.has_token(ignore_auth_mode=True), bool)


def authentication_mode() -> None:
    from ray._raylet import AuthenticationMode

    assert AuthenticationMode.TOKEN != AuthenticationMode.DISABLED


def get_authentication_mode() -> None:
    from ray._raylet import AuthenticationMode, get_authentication_mode

    assert get_authentication_mode() in (AuthenticationMode.DISABLED, AuthenticationMode.TOKEN)


def token_generator() -> None:
    from ray._private.authentication.authentication_token_generator import generate_new_authentication_token

    first, second = generate_new_authentication_token(), generate_new_authentication_token()
    assert isinstance(first, str) and len(first) >= 32 and first != second


def stdstream_dispatcher() -> None:
    import ray._private.worker as worker
    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

    # ray.init registers its printer under this name, and it reads these keys of every forwarded batch
    assert f'"{ray_logs.PRINTER}"' in inspect.getsource(worker)
    printer_source = inspect.getsource(worker.print_worker_logs)
    assert all(f'"{key}"' in printer_source for key in ("lines", "actor_name", "task_name"))
    got = []
    dispatcher.add_handler("raysweep-test", got.append)
    try:
        assert ("raysweep-test", got.append) in [(name, handler) for name, handler in dispatcher.handlers]
        dispatcher.emit({"lines": ["a line"]})
    finally:
        dispatcher.remove_handler("raysweep-test")
    assert got == [{"lines": ["a line"]}]
    assert "raysweep-test" not in [name for name, _ in dispatcher.handlers]


def address_and_port() -> None:
    from ray.train._internal.utils import get_address_and_port

    address, port = get_address_and_port()  # run on rank 0 for the rendezvous
    assert isinstance(address, str) and isinstance(port, int) and 0 < port < 65536


def training_framework() -> None:
    from ray.train.backend import BackendConfig
    from ray.train.torch import TorchConfig
    from ray.train.v2._internal.util import TrainingFramework

    from raysweep.runtime.torch_backend import TorchBackendConfig

    assert isinstance(inspect.getattr_static(BackendConfig, "framework"), property)
    assert TorchBackendConfig(backend="gloo", timeout_s=60).framework == TorchConfig().framework
    assert TorchConfig().framework == TrainingFramework.TORCH


def torch_distributed_env() -> None:
    from ray.train.torch.config import _set_torch_distributed_env_vars

    assert required_parameters(_set_torch_distributed_env_vars) == []  # reads the rank's Train context


def torch_process_group() -> None:
    import torch.distributed as dist
    from ray.train.torch.config import _setup_torch_process_group

    from raysweep.runtime.torch_backend import set_rendezvous_env, setup_process_group

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    set_rendezvous_env("127.0.0.1", port)
    assert {"backend", "world_rank", "world_size", "init_method", "timeout_s"} <= set(
        parameters(_setup_torch_process_group)
    )
    setup_process_group(backend="gloo", world_rank=0, world_size=1, timeout_s=30)  # a group of one, in this process
    try:
        assert dist.is_initialized() and dist.get_world_size() == 1 and dist.get_backend() == "gloo"
    finally:
        dist.destroy_process_group()


def shutdown_torch() -> None:
    from ray.train.torch.config import _shutdown_torch

    # called on the ranks only: it asks Ray for the rank's devices (outside a worker, that starts a Ray)
    assert parameters(_shutdown_torch) == ["destroy_process_group"]


def autoscaling_coordinator() -> None:
    from ray.data._internal.cluster_autoscaler import default_autoscaling_coordinator as coordinator

    assert required_parameters(coordinator.get_or_create_autoscaling_coordinator) == []
    # the actor Ray Train's controllers ask for is the one it makes (tests/integration/test_train_coordinator.py
    # checks that on a real cluster)
    client = importlib.import_module("ray.train.v2._internal.execution.scaling_policy.autoscaling_coordinator_client")
    assert "get_or_create_autoscaling_coordinator" in inspect.getsource(client)


def datasets_callback() -> None:
    from ray.train import ScalingConfig
    from ray.train.torch import TorchTrainer
    from ray.train.v2._internal.callbacks.datasets import DatasetsCallback
    from ray.train.v2._internal.execution.worker_group.worker import RayTrainWorker
    from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

    from raysweep.runtime.train_run import trainer_without_datasets

    # a run's callbacks are made by this method as it starts, the datasets' one whatever the datasets
    assert "callbacks=self._create_default_callbacks()" in without_spaces(inspect.getsource(DataParallelTrainer.fit))
    with warnings.catch_warnings():  # Ray Data's context, copied for the callback, warns of its own deprecated fields
        warnings.simplefilter("ignore", DeprecationWarning)
        plain = TorchTrainer(lambda config: None, scaling_config=ScalingConfig(num_workers=1))
        plain_kinds = [type(c) for c in plain._create_default_callbacks()]
    assert DatasetsCallback in plain_kinds
    lean = trainer_without_datasets()(lambda config: None, scaling_config=ScalingConfig(num_workers=1))
    kinds = [type(c) for c in lean._create_default_callbacks()]
    assert DatasetsCallback not in kinds and kinds == [kind for kind in plain_kinds if kind is not DatasetsCallback]
    # without it a rank's train context gets no dataset provider, which Ray Train allows
    provider = inspect.signature(RayTrainWorker.init_train_context).parameters["dataset_shard_provider"]
    assert provider.default is None


def train_session() -> None:
    from ray.train._internal.session import _TrainSession, get_session

    from raysweep.runtime.early_stop import tune_stopped

    assert get_session() is None and not tune_stopped()  # no trial runs in this thread
    # Tune stops a function trainable through its session's finish, which sets the event the driver watches
    assert "self.stop_event=threading.Event()" in without_spaces(inspect.getsource(_TrainSession))
    assert "self.stop_event.set()" in inspect.getsource(_TrainSession.finish)


def user_exception_base_exc() -> None:
    from ray.train.v2._internal.exceptions import UserExceptionWithTraceback

    from raysweep.runtime.failures import find_error

    own = ValueError("the rank's own error")
    wrapped = pickle.loads(pickle.dumps(UserExceptionWithTraceback(own, "Traceback ...")))  # as it reaches Tune
    assert isinstance(wrapped._base_exc, ValueError) and str(wrapped._base_exc) == str(own)
    assert find_error(wrapped, ValueError) is wrapped._base_exc


# The inventory's entries (raysweep.runtime's docstring), each with its check.
CHECKS: dict[str, Callable] = {
    "ray._private.worker._global_node": global_node,
    "ray._private.worker.global_worker": global_worker,
    "ray._private.ray_constants": ray_constants,
    "ray._raylet.Config": raylet_config,
    "ray._raylet.AuthenticationTokenLoader": token_loader,
    "ray._raylet.AuthenticationMode": authentication_mode,
    "ray._raylet.get_authentication_mode": get_authentication_mode,
    "ray._private.authentication.authentication_token_generator.generate_new_authentication_token": token_generator,
    "ray._private.ray_logging.global_worker_stdstream_dispatcher": stdstream_dispatcher,
    "ray.train._internal.utils.get_address_and_port": address_and_port,
    "ray.train.v2._internal.util.TrainingFramework": training_framework,
    "ray.train.torch.config._set_torch_distributed_env_vars": torch_distributed_env,
    "ray.train.torch.config._setup_torch_process_group": torch_process_group,
    "ray.train.torch.config._shutdown_torch": shutdown_torch,
    "ray.data._internal.cluster_autoscaler.default_autoscaling_coordinator.get_or_create_autoscaling_coordinator": (
        autoscaling_coordinator
    ),
    "ray.train.v2._internal.callbacks.datasets.DatasetsCallback": datasets_callback,
    "ray.train._internal.session.get_session": train_session,
    "ray.train.v2._internal.exceptions.UserExceptionWithTraceback._base_exc": user_exception_base_exc,
}


@pytest.mark.parametrize("api", sorted(CHECKS))
def test_private_api(api, monkeypatch):
    check = CHECKS[api]
    check(monkeypatch) if "monkeypatch" in inspect.signature(check).parameters else check()


def test_the_worker_group_ray_train_hands_the_backend_hooks_runs_functions_on_its_ranks():
    """``TorchBackend.on_start``/``on_shutdown`` call Ray Train's internal worker group (not an import of raysweep's,
    so not in the scanned inventory)."""
    from ray.train.v2._internal.execution.worker_group import WorkerGroup

    assert parameters(WorkerGroup.execute)[:1] == parameters(WorkerGroup.execute_async)[:1] == ["fn"]
    assert parameters(WorkerGroup.execute_single)[:2] == parameters(WorkerGroup.execute_single_async)[:2]
    assert parameters(WorkerGroup.execute_single)[:2] == ["rank", "fn"]
    assert callable(WorkerGroup.__len__)


# The inventory: the ``ray.…`` names in double backticks of raysweep.runtime's docstring that have a private part.
LISTED = re.compile(r"``(ray\.[\w.]+)``")


def is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def listed_apis() -> set[str]:
    return {name for name in LISTED.findall(raysweep.runtime.__doc__) if is_private(name)}


def is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, AttributeError, ValueError):  # a prefix is a module that is not a package
        return False


def api_of(dotted: str) -> str:
    """The entry a dotted use names: its longest module prefix and the first name after it (``ray.a.b.c.d()``,
    with ``ray.a.b`` a module, is ``ray.a.b.c``); a module itself where the use names one."""
    parts = dotted.split(".")
    for end in range(2, len(parts) + 1):
        if not is_module(".".join(parts[:end])):
            return ".".join(parts[:end])
    return dotted


def dotted_name(node: ast.expr) -> str | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(names)])


def private_uses(tree: ast.Module, of_ray: bool = False) -> tuple[set[str], set[str]]:
    """A module's Ray private uses: the entries its imports and ``ray.…`` chains name, and the private attribute
    names it reads of other objects (``obj._x``, ``getattr(obj, "_x")``) where those objects may be Ray's: in a
    module that imports Ray, or one of Ray's wing (``of_ray``: ``raysweep/runtime``, which handles Ray's
    objects without importing Ray)."""
    imported: dict[str, str] = {}  # a name bound by an import -> the dotted thing it is
    apis: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                imported[bound] = alias.name if alias.asname else bound
                if alias.name.startswith("ray.") and is_private(alias.name):
                    apis.add(api_of(alias.name))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                imported[alias.asname or alias.name] = full
                if (node.module == "ray" or node.module.startswith("ray.")) and is_private(full):
                    apis.add(api_of(full))
    if not of_ray and not any(name == "ray" or name.startswith("ray.") for name in imported.values()):
        return apis, set()
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    attributes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            dotted = dotted_name(node)
            if dotted is None or not is_private(dotted):
                continue
            root, _, rest = dotted.partition(".")
            if root in ("self", "cls"):
                continue
            if root in imported:
                full = f"{imported[root]}.{rest}"
                if full.startswith("ray."):
                    apis.add(api_of(full))
            else:  # an object's private attribute: named alone (its owner is not in the source)
                attributes.update(part for part in rest.split(".") if is_private(part))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
        ):
            attributes.add(node.args[1].value)
    return apis, attributes


def scanned_uses() -> dict[str, set[Path]]:
    """Every Ray private use in the source: the entry (or ``._attribute``) -> the files that use it."""
    uses: dict[str, set[Path]] = {}
    for folder in SOURCE_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO)
            of_ray = relative.parts[:2] == RUNTIME
            apis, attributes = private_uses(ast.parse(path.read_text(), str(path)), of_ray)
            for name in apis | {f".{attribute}" for attribute in attributes}:
                uses.setdefault(name, set()).add(relative)
    return uses


def test_the_inventory_lists_exactly_the_private_apis_the_source_uses():
    listed, used = listed_apis(), set(scanned_uses())

    def covers(entry: str, use: str) -> bool:
        return entry == use or (use.startswith(".") and entry.endswith(use))

    unlisted = sorted(use for use in used if not any(covers(entry, use) for entry in listed))
    stale = sorted(entry for entry in listed if not any(covers(entry, use) for use in used))
    assert not unlisted, f"Ray private APIs used but not in raysweep/runtime/__init__.py's list: {unlisted}"
    assert not stale, f"listed in raysweep/runtime/__init__.py but no longer used: {stale}"


def test_every_listed_private_api_has_its_named_test():
    assert listed_apis() == set(CHECKS)


def test_every_private_api_use_lives_in_the_runtime():
    outside = {name: files for name, files in scanned_uses().items() if any(f.parts[:2] != RUNTIME for f in files)}
    assert not outside, f"Ray private APIs used outside raysweep/runtime: {outside}"


def test_the_scan_finds_imports_chains_and_private_attributes():
    source = (
        "import ray\n"
        "from ray._private import ray_constants\n"
        "from ray.train.torch.config import _shutdown_torch\n"
        "import torch\n"
        "def f(error, self):\n"
        "    ray._private.worker._global_node.get_session_dir_path()\n"
        "    torch._dynamo.reset()\n"
        "    self._cache = getattr(error, '_base_exc', None)\n"
        "    return error._traceback_str\n"
    )
    apis, attributes = private_uses(ast.parse(source))
    assert apis == {
        "ray._private.ray_constants",
        "ray.train.torch.config._shutdown_torch",
        "ray._private.worker._global_node",
    }
    assert attributes == {"_base_exc", "_traceback_str"}
    not_ray = ast.parse("import torch\ndef f(m):\n    return m._pos_embed, torch._dynamo\n")
    assert private_uses(not_ray) == (set(), set())
    assert private_uses(not_ray, of_ray=True) == (set(), {"_pos_embed"})
