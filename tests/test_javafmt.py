"""The Java/Scala argument formats the renderer and the simulator print (packgen/javafmt.py)."""

from __future__ import annotations

from rebalance_doctor.packgen import javafmt
from rebalance_doctor.packgen.render import fill


def test_objects_print_as_kafka_prints_them():
    generation = javafmt.Generation(42, "consumer-orders-1-6b1f", "range")
    assert str(generation) == "Generation{generationId=42, memberId='consumer-orders-1-6b1f', protocol='range'}"
    assert str(javafmt.NO_GENERATION) == "Generation{generationId=-1, memberId='', protocol='null'}"
    assert str(javafmt.coordinator_node(1, "broker-1")) == "broker-1:9092 (id: 2147483646 rack: null)"
    member = javafmt.MemberMetadata("consumer-x-1-6c52", None, "consumer-x-1", javafmt.client_host("10.42.2.65"),
                                    45000, 300000, ("range", "cooperative-sticky"))
    assert str(member) == ("MemberMetadata(memberId=consumer-x-1-6c52, groupInstanceId=None, clientId=consumer-x-1, "
                           "clientHost=/10.42.2.65, sessionTimeoutMs=45000, rebalanceTimeoutMs=300000, "
                           "supportedProtocols=List(range, cooperative-sticky))")
    static = javafmt.MemberMetadata("m", "orders-0", "c", "/h", 1, 2)
    assert "groupInstanceId=Some(orders-0)" in str(static)


def test_collections_options_and_errors():
    assert javafmt.java_collection(javafmt.partitions("orders", [0, 1])) == "[orders-0, orders-1]"
    assert javafmt.java_map({"a": 1, "b": None}) == "{a=1, b=null}"
    assert javafmt.scala_map({"a": 1}) == "Map(a -> 1)"
    assert javafmt.java_optional(None) == "Optional.empty" and javafmt.java_optional("x") == "Optional[x]"
    assert javafmt.scala_option("x") == "Some(x)"
    error = javafmt.error("REBALANCE_IN_PROGRESS")
    assert str(error) == "REBALANCE_IN_PROGRESS" and error.code == 27
    assert error.exception_string() == ("org.apache.kafka.common.errors.RebalanceInProgressException: "
                                        "The group is rebalancing, so a rejoin is needed.")


def test_fill_follows_slf4j():
    assert fill("Member {} left generation {}", ["m-1", 5]) == "Member m-1 left generation 5"
    assert fill("tasks {{}} of {}", ["0_1", "x"]) == "tasks {0_1} of x"
    assert fill("{} and {}", ["only"]) == "only and {}"


def test_member_objects_of_each_coordinator():
    scala_2x = javafmt.MemberMetadata("m-1", "orders-0", "c-1", "/10.0.0.7", 10000, 300000, ("range",),
                                      trailing_comma=True)
    assert str(scala_2x).endswith("sessionTimeoutMs=10000, rebalanceTimeoutMs=300000, supportedProtocols=List(range), )")
    java = javafmt.ClassicGroupMember("m-1", None, "c-1", "/10.0.0.7", 300000, 45000, "consumer", ("range", "roundrobin"))
    assert str(java) == ("ClassicGroupMember(memberId='m-1', groupInstanceId='', clientId='c-1', clientHost='/10.0.0.7', "
                         "rebalanceTimeoutMs=300000, sessionTimeoutMs=45000, protocolType='consumer', "
                         "supportedProtocols=[range, roundrobin])")
    coordinator = javafmt.FindCoordinatorCoordinator("avro-consumer2", 1, "kafka1", 29092)
    assert str(coordinator) == ("Coordinator(key='avro-consumer2', nodeId=1, host='kafka1', port=29092, errorCode=0, "
                                "errorMessage='')")


def test_times_ids_and_scala_sets():
    assert javafmt.log_date_time(1714571412345) == "2024-05-01 13:50:12,345 Z"
    assert javafmt.log_date_time(1714571412345, 120) == "2024-05-01 15:50:12,345 +02:00"
    assert len(javafmt.kafka_uuid(12345)) == 22 and "=" not in javafmt.kafka_uuid(12345)
    assert javafmt.scala_set(["a", "b"]) == "Set(a, b)"
    assert javafmt.scala_set(["a", "b", "c", "d", "e"]) == "HashSet(a, b, c, d, e)"
    assert javafmt.throwable("org.apache.kafka.common.errors.TimeoutException", None) == \
        "org.apache.kafka.common.errors.TimeoutException"
