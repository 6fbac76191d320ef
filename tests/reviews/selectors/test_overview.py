"""The group page's overview reads (reviews/selectors/overview.py) that need no database."""

from reviews.selectors.overview import lane_order, rollout_test_counts


def test_lane_order_keeps_the_blind_shuffle_within_passing_and_failing():
    class R:
        def __init__(self, index, passed):
            self.index, self.passed = index, passed

    rollouts = [R(0, True), R(1, False), R(2, True), R(3, None), R(4, False), R(5, True)]
    assert [r.index for r in lane_order(rollouts, [])] == [0, 2, 5, 3, 1, 4]
    assert [r.index for r in lane_order(rollouts, [4, 5, 1, 0, 3, 2])] == [5, 0, 2, 3, 4, 1]


def test_test_counts_read_fail_to_pass_and_pass_to_pass():
    outcomes = {
        "FAIL_TO_PASS": {"success": ["a", "b"], "failure": ["c"]},
        "PASS_TO_PASS": {"success": ["d"], "failure": []},
        "other": {"success": ["x"]},
    }
    assert rollout_test_counts(outcomes) == {"f2p": (2, 1), "p2p": (1, 0)}
    assert rollout_test_counts({"FAIL_TO_PASS": "garbage"}) == {} and rollout_test_counts(None) == {}
