"""Search spaces: YAML parsing, grid expansion, seeded sampling, overrides and the errors users see."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.planning.checks import check_trial
from raysweep.planning.space import SPACES_DIR, list_spaces, load_space, load_yaml, parse_space

BUNDLED = sorted(SPACES_DIR.glob("*.yaml"))


def space(text: str, name: str = "t"):
    return parse_space(name, text, f"{name}.yaml")


# ---- bundled spaces -----------------------------------------------------------------------


def test_there_is_at_least_one_bundled_space():
    assert "batch_grid" in [p.stem for p in BUNDLED]


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_every_bundled_space_parses_and_expands_to_valid_trials(path: Path, tmp_path):
    s = load_space(path.stem)
    assert s.name == path.stem
    assert s.description, f"{path.name} has no description"
    trials = s.expand()
    assert trials and all(isinstance(t, TrialParams) for t in trials)
    for t in trials:
        if t.dataset in ("cifar10", "cifar100", "imagefolder") and not t.data_dir:
            t = dataclasses.replace(t, data_dir=str(tmp_path))  # comes from --data-dir at run time
        check_trial(t)
    assert load_space(str(path)).expand() == trials  # by path, same trials


def test_list_spaces_names_every_bundled_file_with_its_description():
    spaces = list_spaces()
    assert sorted(spaces) == [p.stem for p in BUNDLED]
    assert spaces["batch_grid"] == load_space("batch_grid").description


def test_batch_grid_is_five_micro_batches_on_one_worker_three_times():
    trials = load_space("batch_grid").expand()
    rounds = [[t.micro_batch_per_worker for t in trials if t.repeat == k] for k in range(3)]
    assert [sorted(r) for r in rounds] == [[16, 32, 64, 128, 256]] * 3
    assert {t.num_workers for t in trials} == {1}


def test_tuned_batch_searches_two_decades_around_the_scaling_rule_at_each_of_batch_grids_batches():
    tuned, grid = load_space("tuned_batch"), load_space("batch_grid")
    first_round = [t for t in tuned.expand() if t.repeat == 0]
    rule_trials = {t.micro_batch_per_worker: t for t in grid.expand() if t.repeat == 0}
    # two arms of batch_grid's batches: fixed epochs, and every epoch capped so each batch trains 25 steps
    arms = {
        cap: sorted(t.micro_batch_per_worker for t in first_round if t.max_steps_per_epoch == cap) for cap in (0, 5)
    }
    assert arms == {0: sorted(rule_trials), 5: sorted(rule_trials)}
    assert (tuned.search.search, tuned.search.metric, tuned.search.scheduler.kind) == ("optuna", "val_accuracy", "asha")
    assert tuned.num_samples >= 8 and tuned.search.scheduler.grace_period >= 2
    for template in first_round:
        rule = rule_trials[template.micro_batch_per_worker].learning_rate  # the optimizer's scaling rule
        axes = tuned.distributions_of(template)
        low, high = axes["lr"]["loguniform"]
        assert low == pytest.approx(rule / 10, rel=1e-6) and high == pytest.approx(rule * 10, rel=1e-6)
        assert set(axes) == {"lr", "lr_warmup"}
    # batch_grid's CPU default: the same model, data and epochs, so the two reports set the same trials side by side
    same = ("model", "dataset", "image_size", "epochs", "flip", "num_workers", "grad_accum_steps")
    assert {k: getattr(first_round[0], k) for k in same} == {k: getattr(grid.expand()[0], k) for k in same}


def test_each_grid_keeps_its_own_distributions_for_the_templates_of_its_points():
    s = space(
        "axes:\n"
        "  - {micro_batch_per_worker: [16, 32], lr: {loguniform: [1.0e-4, 1.0e-3]}}\n"
        "  - {micro_batch_per_worker: [64], lr: {loguniform: [1.0e-3, 1.0e-2]}}\n"
        "search: optuna\n"
    )
    assert s.searched_axes() == {"lr": "loguniform"}
    ranges = [s.distributions_of(t)["lr"]["loguniform"] for t in s.expand()]
    assert ranges == [[1e-4, 1e-3], [1e-4, 1e-3], [1e-3, 1e-2]]
    mixed = space("axes:\n  - {lr: {loguniform: [1.0e-4, 1.0e-3]}}\n  - {lr: {uniform: [0.1, 0.2]}}\nsearch: optuna\n")
    with pytest.raises(UsageError, match="same distribution axes in every grid"):
        mixed.searched_axes()


@pytest.mark.parametrize("name", ["batch_grid", "strong_scaling", "weak_scaling", "accum_grid", "heterogeneity"])
def test_the_spaces_of_the_papers_findings_repeat_every_point_three_times(name):
    assert load_space(name).repeats == 3


def test_repeats_run_in_rounds_each_with_its_own_seed_and_index():
    trials = space("axes: {num_workers: [1, 2]}\nfixed: {seed: 7}\nrepeats: 3").expand()
    assert [t.repeat for t in trials] == [0, 0, 1, 1, 2, 2]
    assert [sorted((t.num_workers, t.seed) for t in trials if t.repeat == r) for r in range(3)] == [
        [(1, 7), (2, 7)],
        [(1, 8), (2, 8)],
        [(1, 9), (2, 9)],
    ]


def test_each_round_of_repeats_runs_in_a_seeded_random_order_and_one_round_in_the_grids():
    grid = "axes: {micro_batch_per_worker: [16, 32, 64, 128, 256]}\n"
    orders = [[t.micro_batch_per_worker for t in space(grid + "repeats: 4").expand()] for _ in range(2)]
    assert orders[0] == orders[1], "the order is drawn from the seed: the same every time"
    rounds = [tuple(orders[0][5 * k : 5 * k + 5]) for k in range(4)]
    assert len(set(rounds)) > 1 and any(r != (16, 32, 64, 128, 256) for r in rounds)
    assert [t.micro_batch_per_worker for t in space(grid).expand()] == [16, 32, 64, 128, 256]


def test_repeats_from_the_command_line_replace_the_spaces_and_none_keeps_them():
    s = space("axes: {num_workers: [1]}\nrepeats: 3")
    assert len(s.with_repeats(None).expand()) == 3
    assert [t.repeat for t in s.with_repeats(2).expand()] == [0, 1]
    with pytest.raises(UsageError, match="--repeats must be a positive integer, got 0"):
        s.with_repeats(0)


# ---- expansion ---------------------------------------------------------------------------


def test_grid_is_the_product_of_its_axes_with_fixed_values_applied():
    s = space(
        """
axes:
  num_workers: [1, 2, 4]
  micro_batch_per_worker: [16, 32]
  optimizer: [sgd, adamw]
fixed:
  epochs: 1
"""
    )
    trials = s.expand()
    assert len(trials) == 3 * 2 * 2
    combos = {(t.num_workers, t.micro_batch_per_worker, t.optimizer) for t in trials}
    assert len(combos) == 12
    assert {t.epochs for t in trials} == {1}


def test_off_and_no_stay_strings_and_only_true_and_false_are_booleans():
    """YAML 1.1 would read ``off`` as False: ``prepare: off`` must reach the trial as the word it is."""
    s = space(
        """
axes:
  prepare: [off, pixels]
fixed:
  flip: false
  decode: auto
"""
    )
    assert [t.prepare for t in s.expand()] == ["off", "pixels"] and not s.expand()[0].flip
    assert load_yaml("[on, off, yes, no, true, False]") == ["on", "off", "yes", "no", True, False]


def test_a_list_of_grids_is_their_union():
    s = space(
        """
axes:
  - {num_workers: [1, 2], micro_batch_per_worker: [32]}
  - {num_workers: [4], micro_batch_per_worker: [8, 16, 64]}
"""
    )
    trials = s.expand()
    assert [(t.num_workers, t.micro_batch_per_worker) for t in trials] == [
        (1, 32),
        (2, 32),
        (4, 8),
        (4, 16),
        (4, 64),
    ]


def test_no_axes_is_one_trial_of_the_fixed_values():
    trials = space("fixed: {num_workers: 2}").expand()
    assert len(trials) == 1 and trials[0].num_workers == 2


def test_num_samples_repeats_every_grid_point():
    trials = space("axes: {num_workers: [1, 2]}\nnum_samples: 3").expand()
    assert [t.num_workers for t in trials] == [1, 1, 1, 2, 2, 2]


DISTRIBUTION_SPACE = """
axes:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
  weight_decay: {uniform: [0.0, 0.1]}
  micro_batch_per_worker: {randint: [8, 12]}
  optimizer: {choice: [sgd, adamw, lamb]}
num_samples: 40
"""


def test_distributions_are_sampled_inside_their_bounds():
    trials = space(DISTRIBUTION_SPACE).expand(seed=0)
    assert len(trials) == 40
    assert all(1e-4 <= t.lr <= 1e-2 for t in trials)
    assert all(0.0 <= t.weight_decay <= 0.1 for t in trials)
    assert {t.micro_batch_per_worker for t in trials} <= {8, 9, 10, 11}  # randint excludes the upper bound
    assert {t.optimizer for t in trials} <= {"sgd", "adamw", "lamb"}
    assert len({t.lr for t in trials}) == 40  # really sampled, not one value repeated
    assert len({t.optimizer for t in trials}) == 3


def test_loguniform_spreads_over_decades():
    lrs = [t.lr for t in space(DISTRIBUTION_SPACE).expand(seed=1)]
    below = sum(1 for lr in lrs if lr < 1e-3)  # half the log range lies below 1e-3
    assert 8 <= below <= 32
    assert all(math.isfinite(lr) for lr in lrs)


def test_sampling_is_deterministic_for_a_seed_and_differs_between_seeds():
    s = space(DISTRIBUTION_SPACE)
    assert s.expand(seed=7) == s.expand(seed=7)
    assert s.expand(seed=7) != s.expand(seed=8)
    assert space(DISTRIBUTION_SPACE).expand(seed=7) == s.expand(seed=7)


# ---- overrides -----------------------------------------------------------------------------


GRID = """
axes:
  micro_batch_per_worker: [16, 32]
  num_workers: [1, 2]
fixed:
  epochs: 3
  optimizer: sgd
"""


def test_override_replaces_a_fixed_value():
    trials = space(GRID).with_overrides({"epochs": 1}).expand()
    assert len(trials) == 4 and {t.epochs for t in trials} == {1}
    assert {t.optimizer for t in trials} == {"sgd"}


def test_scalar_override_replaces_an_axis():
    trials = space(GRID).with_overrides({"num_workers": 4}).expand()
    assert [(t.micro_batch_per_worker, t.num_workers) for t in trials] == [(16, 4), (32, 4)]


def test_list_override_becomes_an_axis():
    trials = space(GRID).with_overrides({"num_workers": [1, 2, 4], "optimizer": ["sgd", "adamw"]}).expand()
    assert len(trials) == 2 * 3 * 2
    assert {t.num_workers for t in trials} == {1, 2, 4}
    assert {t.optimizer for t in trials} == {"sgd", "adamw"}


def test_override_of_a_key_that_was_an_axis_in_every_grid_collapses_identical_grids():
    s = space("axes:\n  - {num_workers: [1]}\n  - {num_workers: [2]}").with_overrides({"num_workers": 8})
    assert [t.num_workers for t in s.expand()] == [8]


def test_a_list_override_of_points_the_grids_hold_selects_those_grids_with_their_own_ranges():
    s = load_space("tuned_batch").with_overrides({"micro_batch_per_worker": [16, 256]})
    assert [(g["micro_batch_per_worker"], g["lr"]["loguniform"]) for g in s.grids] == [
        ([16], [2.5e-05, 2.5e-03]),
        ([256], [1.0e-04, 1.0e-02]),
    ] * 2  # in each of its two arms (fixed epochs, step-matched)
    # a value no grid holds: the list replaces the axis in every grid, as for a single grid
    s = space("axes:\n  - {num_workers: [1], epochs: [1]}\n  - {num_workers: [2], epochs: [2]}")
    assert s.with_overrides({"num_workers": [1, 4]}).grids == [
        {"num_workers": [1, 4], "epochs": [1]},
        {"num_workers": [1, 4], "epochs": [2]},
    ]
    assert s.with_overrides({"num_workers": [2]}).grids == [{"num_workers": [2], "epochs": [2]}]


def test_overrides_do_not_change_the_original_space():
    s = space(GRID)
    s.with_overrides({"num_workers": 8, "epochs": 1})
    assert len(s.expand()) == 4 and s.fixed["epochs"] == 3


def test_override_of_an_unknown_parameter_is_rejected():
    with pytest.raises(UsageError, match="unknown trial parameter 'num_worker'"):
        space(GRID).with_overrides({"num_worker": 2})


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("axes:\n  num_workers: [1, 2\nfixed: {}\n", ["not valid YAML at line"]),
        ("axes: {}\nsamples: 3\n", ["unknown key 'samples'; did you mean 'num_samples'? (one of axes, description"]),
        ("axes:\n  num_worker: [1, 2]\n", ["unknown trial parameter 'num_worker'", "num_workers"]),
        ("fixed:\n  batch: 4\n", ["unknown trial parameter 'batch'"]),
        ("axes:\n  num_workers: []\n", ["axis 'num_workers' has no values"]),
        ("axes:\n  num_workers: 4\n", ["axis 'num_workers' must be a list of values or a distribution"]),
        ("axes:\n  lr: {gaussian: [0, 1]}\n", ["axis 'lr' must be a list of values or one of", "loguniform"]),
        ("axes:\n  lr: {logunifrom: [0.1, 1]}\n", ["got {'logunifrom': [0.1, 1]}; did you mean 'loguniform'?"]),
        ("axes:\n  lr: {uniform: [0.1]}\n", ["distribution uniform of axis 'lr' needs a list of 2 values"]),
        ("axes:\n  lr: {uniform: 0.1}\n", ["distribution uniform of axis 'lr'"]),
        ("axes:\n  optimizer: {choice: []}\n", ["distribution choice of axis 'optimizer'"]),
        ("axes:\n  lr: {uniform: [0, 1], loguniform: [1, 2]}\n", ["axis 'lr' must be"]),
        ("num_samples: 0\n", ["num_samples must be a positive integer, got 0"]),
        ("num_samples: two\n", ["num_samples must be a positive integer, got 'two'"]),
        ("num_samples: true\n", ["num_samples must be a positive integer"]),
        ("repeats: 0\n", ["repeats must be a positive integer, got 0"]),
        ("requires: tpu\n", ["requires must be 'gpu' or absent"]),
        ("- num_workers: 1\n", ["a space file is a mapping"]),
        ("just a string\n", ["a space file is a mapping"]),
        ("", ["a space file is a mapping"]),
        ("axes: [1, 2]\n", ["'axes' must map parameter names to values"]),
        ("fixed: [1, 2]\n", ["'fixed' must map parameter names to values"]),
    ],
)
def test_bad_space_files_are_usage_errors_naming_the_file_and_the_problem(text, fragments):
    with pytest.raises(UsageError) as e:
        space(text, name="bad")
    message = str(e.value)
    assert message.startswith("bad.yaml: ")
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


def test_malformed_yaml_reports_the_line_of_the_problem():
    text = "description: x\naxes:\n  num_workers: [1, 2]\n  lr: {uniform: [0, 1]\nfixed: {}\n"
    with pytest.raises(UsageError, match=r"at line 5"):
        space(text)


def test_bad_value_in_an_axis_is_caught_on_expansion_naming_the_field():
    with pytest.raises(UsageError, match="num_workers must be an integer, got 'many'"):
        space("axes: {num_workers: [1, many]}").expand()


@pytest.mark.parametrize("bounds", ["[0, 1]", "[a, b]", "[0.1, 0.01]"])
def test_bad_loguniform_bounds_are_usage_errors_naming_the_axis(bounds):
    with pytest.raises(UsageError, match="lr"):
        space(f"axes:\n  lr: {{loguniform: {bounds}}}\n").expand()


def test_exponent_bounds_that_yaml_reads_as_strings_are_numbers():
    """YAML 1.1 reads 1e-4 (no dot) as a string; a user writing it means the number."""
    trials = space("axes:\n  lr: {loguniform: [1e-4, 1e-2]}\nnum_samples: 5\n").expand()
    assert all(1e-4 <= t.lr <= 1e-2 for t in trials)


def test_missing_space_file_path_is_a_usage_error(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(UsageError, match="does not exist") as e:
        load_space(str(missing))
    assert str(missing) in str(e.value)


def test_a_directory_given_as_space_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_space(str(tmp_path))


def test_unknown_space_name_says_the_closest_bundled_one_and_where_all_are_listed():
    with pytest.raises(UsageError) as e:
        load_space("strong_scalng")
    assert str(e.value) == (
        "unknown space 'strong_scalng'; did you mean 'strong_scaling'? "
        "(all: --list-spaces; or give a path to a .yaml file)"
    )


def test_user_space_file_is_loaded_by_path_and_named_after_it(tmp_path):
    path = tmp_path / "mine.yml"
    path.write_text("description: mine\naxes: {num_workers: [1, 2]}\n")
    s = load_space(str(path))
    assert (s.name, s.description, len(s.expand())) == ("mine", "mine", 2)


def test_yaml_loader_is_safe_and_never_executes_tags(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f"description: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(UsageError, match="not valid YAML"):
        load_space(str(path))
    assert not marker.exists()
