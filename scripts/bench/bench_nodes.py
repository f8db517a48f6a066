"""What the Python benches that run on scripts/cluster-local nodes share: the mpirun arguments
for one host or for the nodes, and bringing 4 nodes up at a link rate with their launch
arguments and node1's address in the environment."""
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_LOCAL = os.path.join(REPO, "scripts", "cluster-local")


def launch_args(where):
    """mpirun's placement arguments: oversubscribed on this host, or one rank per node."""
    if where == "one-host":
        return ["--oversubscribe", "--bind-to", "none"]
    return os.environ["GRADSHARE_CLUSTER_MPIRUN_ARGS"].split()


def nodes_up(rate, nodes=4):
    """Starts NODES nodes at RATE (a cluster left over is taken down first) and puts
    GRADSHARE_CLUSTER_* and GRADSHARE_CLUSTER_NODE1 (node1's address) into os.environ."""
    nodes_down()
    printed = subprocess.check_output([CLUSTER_LOCAL, "up", "--nodes", str(nodes), "--rate", rate,
                                       "--no-slurm"], text=True)
    lines = subprocess.check_output(
        ["bash", "-c", printed + '\n. "$GRADSHARE_CLUSTER_DIR/cluster.env"; env | grep ^GRADSHARE_CLUSTER; '
         'echo "GRADSHARE_CLUSTER_NODE1=${subnet%.*}.1"'], text=True)
    for line in lines.splitlines():
        key, _, value = line.partition("=")
        os.environ[key] = value


def nodes_down():
    subprocess.call([CLUSTER_LOCAL, "down"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.pop("GRADSHARE_CLUSTER_MPIRUN_ARGS", None)
