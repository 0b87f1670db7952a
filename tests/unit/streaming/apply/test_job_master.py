"""The apply's Spark master: a local master retries a failed task as a cluster does."""

from streaming.apply.job import TASK_ATTEMPTS, local_with_retries


def test_a_local_master_gets_the_clusters_task_attempts():
    assert local_with_retries("local") == f"local[1,{TASK_ATTEMPTS}]"
    assert local_with_retries("local[2]") == f"local[2,{TASK_ATTEMPTS}]"
    assert local_with_retries("local[*]") == f"local[*,{TASK_ATTEMPTS}]"


def test_a_master_naming_its_attempts_or_a_cluster_is_left_alone():
    for master in ("local[2,1]", "local[*,8]", "spark://127.0.0.1:7077", "yarn", "k8s://https://k:6443", None):
        assert local_with_retries(master) == master
