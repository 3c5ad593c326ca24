"""The Kafka lab: real Apache Kafka on 127.0.0.1, faults driven from outside, logs recorded byte for byte.

    python -m rebalance_doctor.lab list
    python -m rebalance_doctor.lab record poll-timeout --kafka 4.4.0 --out /tmp/poll-timeout
    python -m rebalance_doctor.lab record --all --out fixtures/lab

Releases are resolved from Maven Central with Maven (``releases.py``), the lab's Java clients are
compiled against them (``java_build.py``), brokers run in KRaft mode (``cluster.py``), every client
is an OS process of its own with its own log (``apps.py``), a scenario is data (``scenarios.toml``)
played by ``recorder.py``, and the truth is written from what the lab did (``truth.py``). Stands
beside the analysis flow: nothing under cli/, api, rules/, classify/, timeline/ or core/ imports it.
"""
