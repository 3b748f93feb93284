#!/usr/bin/env python3
"""Writes the ONNX backend node tests that ship with the pip `onnx` package to a folder.

The pip package carries the test *cases* (onnx.backend.test.case.node) but not the
generated data, and `backend-test-tools generate-data` only writes model cases, so this
writes each node case in the standard layout:

    OUT/<test_name>/model.onnx
    OUT/<test_name>/test_data_set_0/input_<j>.pb, output_<j>.pb
    OUT/index.json   [{name, op_type, domain, expanded, rtol, atol}, ...]

Usage: python3 tests/onnx_backend/generate_node_tests.py OUT
Idempotent: skips the work when OUT/index.json was written by the same onnx version.
"""
import json
import os
import re
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "build/onnx_node_tests"
    index_path = os.path.join(out, "index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            if json.load(f).get("onnx_version") == onnx.__version__:
                print(f"node tests already generated in {out} (onnx {onnx.__version__})")
                return 0
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        from onnx.backend.test.case import node as node_cases

        cases = node_cases.collect_testcases()
        op_of_test = {name: (n.op_type, n.domain) for name, n in node_cases._existing_names.items()}

    entries = []
    skipped = 0
    for case in cases:
        base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
        op_type, domain = op_of_test.get(base, (None, None))
        graph = case.model.graph
        # octet runs tensors only; sequence/map/optional-typed tests are out of scope.
        if any(not v.type.HasField("tensor_type") for v in list(graph.input) + list(graph.output)):
            skipped += 1
            continue
        case_dir = os.path.join(out, case.name)
        data_dir = os.path.join(case_dir, "test_data_set_0")
        os.makedirs(data_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        inputs, outputs = case.data_sets[0]
        present_inputs = [i for i in graph.input]
        for j, (value, info) in enumerate(zip(inputs, present_inputs)):
            proto = value if isinstance(value, onnx.TensorProto) else numpy_helper.from_array(value, info.name)
            with open(os.path.join(data_dir, f"input_{j}.pb"), "wb") as f:
                f.write(proto.SerializeToString())
        for j, (value, info) in enumerate(zip(outputs, graph.output)):
            proto = value if isinstance(value, onnx.TensorProto) else numpy_helper.from_array(value, info.name)
            with open(os.path.join(data_dir, f"output_{j}.pb"), "wb") as f:
                f.write(proto.SerializeToString())
        entries.append({
            "name": case.name,
            "op_type": op_type or graph.node[0].op_type,
            "domain": domain if domain is not None else graph.node[0].domain,
            "expanded": case.name != base,
            "rtol": case.rtol,
            "atol": case.atol,
        })
    with open(index_path, "w") as f:
        json.dump({"onnx_version": onnx.__version__, "tests": entries}, f, indent=1)
    print(f"wrote {len(entries)} node tests to {out} ({skipped} non-tensor tests skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
