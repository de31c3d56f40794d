"""The fault proxy the resilience tests put between clients and moto changes only what a test
asks it to: an object read through it without faults is the object, and a HEAD says its size
(Lance sizes a file by HEAD before it reads ranges of it)."""

from __future__ import annotations

import boto3

from tests.faultproxy import FaultProxy


def test_without_faults_the_proxy_passes_objects_and_their_sizes(
    moto_endpoint: str, moto_bucket: str
) -> None:
    name = moto_bucket.removeprefix("s3://").split("/", 1)[0]
    boto3.client("s3", endpoint_url=moto_endpoint).put_object(
        Bucket=name, Key="k", Body=b"x" * 1234
    )
    with FaultProxy(moto_endpoint, rate=0, ignore_conditions=True) as proxy:
        client = boto3.client("s3", endpoint_url=proxy.url)
        assert client.head_object(Bucket=name, Key="k")["ContentLength"] == 1234
        ranged = client.get_object(Bucket=name, Key="k", Range="bytes=1000-1233")
        assert ranged["Body"].read() == b"x" * 234
        assert client.get_object(Bucket=name, Key="k")["Body"].read() == b"x" * 1234
