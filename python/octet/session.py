"""octet.InferenceSession: onnxruntime's InferenceSession surface over octet's runtime."""
import os
import numpy as np

from . import _octet

# onnxruntime's spelling of element types ("tensor(float)"), so code that reads
# NodeArg.type keeps working when it swaps engines.
_ORT_TYPE = {"float32": "float", "float64": "double"}


class NodeArg:
    """A model input or output: .name, .shape (ints, and str for symbolic dims such as
    "batch"; None when the rank is unknown) and .type ("tensor(float)", "tensor(int64)")."""

    def __init__(self, name, element_type, shape):
        self.name = name
        self.type = "tensor(%s)" % _ORT_TYPE.get(element_type, element_type)
        self.shape = shape

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def as_input_array(name, value):
    """A C-contiguous, native-byte-order numpy array of `value` (a copy only when needed)."""
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError("input %r: octet takes numeric numpy arrays, got an object array" % name)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return np.ascontiguousarray(array)


class InferenceSession:
    """Load an ONNX model, optimize it and prepare it to run on the CPU.

    InferenceSession(path_or_bytes, threads=0, optimize=True, adapt_threads=True)

    path_or_bytes: a model file path, or the serialized model as bytes.
    threads: kernel threads (0: one per core the process may use).
    adapt_threads: a run uses one thread while other processes compete for the cores,
        probing now and then whether they left (faster there than waiting threads; the
        outputs are the same bits). False: every run uses `threads`.
    optimize: True (level 2: cleanup and fusions), False (none), or a level 0, 1, 2.
    Extra keyword arguments onnxruntime takes (providers, sess_options) are accepted and
    ignored, so existing code runs unchanged.
    """

    def __init__(self, path_or_bytes, threads=0, optimize=True, providers=None, sess_options=None,
                 adapt_threads=True, **kwargs):
        if optimize is True:
            level = 2
        elif optimize is False:
            level = 0
        else:
            level = int(optimize)
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._session = _octet.Session.from_bytes(bytes(path_or_bytes), int(threads), level, bool(adapt_threads))
            self._path = None
        else:
            self._path = os.fspath(path_or_bytes)
            self._session = _octet.Session(self._path, int(threads), level, bool(adapt_threads))
        self._inputs = [NodeArg(*i) for i in self._session.inputs()]
        self._outputs = [NodeArg(*o) for o in self._session.outputs()]

    def get_inputs(self):
        """The inputs a run must be given, as NodeArg (name, shape, type)."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs, as NodeArg (name, shape, type)."""
        return list(self._outputs)

    def get_providers(self):
        """Always ["OctetCPU"]: octet runs on the CPU only."""
        return ["OctetCPU"]

    @property
    def threads(self):
        """The kernel threads this session uses."""
        return self._session.threads

    def run(self, output_names, input_feed, run_options=None):
        """Run the model.

        output_names: the outputs to return, in order; None or [] for all of them.
        input_feed: {input name: numpy array (or anything np.asarray takes)}. C-contiguous
            arrays of the model's element type are read in place, without a copy.
        Returns a list of numpy arrays. Releases the GIL while running, so threads can
        share one session. Raises octet.OctetError on a missing, extra or mistyped input.
        """
        if not isinstance(input_feed, dict):
            raise TypeError("input_feed must be a dict {name: array}, got %s" % type(input_feed).__name__)
        feed = [(str(name), as_input_array(name, value)) for name, value in input_feed.items()]
        return self._session.run(list(output_names or []), feed)
