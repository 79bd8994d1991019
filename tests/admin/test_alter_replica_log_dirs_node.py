"""A controller instance answers AlterReplicaLogDirs (34) as a Kafka node with none of the named
directories: every replica LOG_DIR_NOT_FOUND, at every version (docs/DESIGN.md section 5.5)."""

import pytest

from protocol.errors import ErrorCode
from tests.admin.test_every_node import ask, standby


@pytest.mark.parametrize("version", range(0, 3))
async def test_every_replica_log_dir_not_found(version):
    body = {"dirs": [{"path": "/data/d1", "topics": [{"name": "orders", "partitions": [0, 2]}]},
                     {"path": "/data/d2", "topics": [{"name": "clicks", "partitions": [1]}]}]}
    answer = await ask(standby(), 34, version, body)
    codes = {(r["topic_name"], p["partition_index"]): p["error_code"] for r in answer["results"] for p in r["partitions"]}
    assert codes == {("orders", 0): ErrorCode.LOG_DIR_NOT_FOUND, ("orders", 2): ErrorCode.LOG_DIR_NOT_FOUND,
                     ("clicks", 1): ErrorCode.LOG_DIR_NOT_FOUND}
