"""The offline engine across replicas: N replicas, each running a policy on its own hardware,
behind a router that reads their reports (`slidingpolicy.routing`), as stale as a report
period. One replica behind round robin is the single engine (`slidingpolicy.engine`)."""

from slidingpolicy.cluster.cluster_output import ClusterOutput, ClusterStats
from slidingpolicy.cluster.event_loop import replica_names, simulate_cluster
from slidingpolicy.cluster.spec import ClusterSpec

__all__ = ["ClusterOutput", "ClusterSpec", "ClusterStats", "replica_names", "simulate_cluster"]
