"""Decode and re-encode objects with the official Kubernetes Python client.

Reads a JSON array of {"model": "<client model class>", "object": <JSON>} from stdin, decodes each
object into the client's model class (which checks field names, types and required fields), encodes it
back with the client's own serializer, and writes the JSON array of results to stdout. kapi's tests
feed it what kapi writes and decode what it returns, so both directions of the wire meet a real client.
"""

import json
import sys

from kubernetes.client import ApiClient


class _Response:
    """The one attribute ApiClient.deserialize reads from an HTTP response."""

    def __init__(self, body):
        self.data = body


def main():
    client = ApiClient()
    cases = json.load(sys.stdin)
    out = []
    for case in cases:
        decoded = client.deserialize(_Response(json.dumps(case["object"])), case["model"])
        out.append(client.sanitize_for_serialization(decoded))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
