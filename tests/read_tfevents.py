#!/usr/bin/env python3
"""Reads a TensorBoard event file without the writer's code or any protobuf library, for the
tests of trainers/tensorboard_events.h: checks the TFRecord framing and both CRCs of every record
with a CRC-32C of its own, decodes each record's tensorflow.Event from the protobuf wire format,
and prints the events as JSON, in file order:

  [{"wall_time": 1700000000.5, "step": 0, "file_version": "brain.Event:2"},
   {"wall_time": 1700000001.2, "step": 3, "values": [["train/loss", 0.693], ...]}, ...]

Values are the float32 simple_value, printed exactly. Exits 1, saying why, on a short record, a
CRC that does not match, or a record that is not an Event of file_version or scalars.

usage: read_tfevents.py FILE
"""
import json
import struct
import sys


class BadFile(Exception):
    pass


def crc32c(data):
    """CRC-32C bit by bit: Castagnoli's polynomial, reflected (0x82F63B78), init and xor-out ~0."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob):
    """Each record's data: uint64 length, uint32 masked CRC of it, data, uint32 masked CRC of data."""
    at, number = 0, 0
    while at < len(blob):
        if len(blob) - at < 12:
            raise BadFile(f"record {number}: {len(blob) - at} bytes left, short of a header")
        header = blob[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", blob[at + 8:at + 12])
        if masked_crc(header) != length_crc:
            raise BadFile(f"record {number} at byte {at}: the length's CRC does not match")
        end = at + 12 + length + 4
        if end > len(blob):
            raise BadFile(f"record {number} at byte {at}: {length} bytes of data run past the file's end")
        data = blob[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[end - 4:end])
        if masked_crc(data) != data_crc:
            raise BadFile(f"record {number} at byte {at}: the data's CRC does not match")
        yield data
        at, number = end, number + 1


def varint(buf, at):
    value, shift = 0, 0
    while True:
        if at >= len(buf):
            raise BadFile("a varint runs past its message")
        byte = buf[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at
        if shift >= 70:
            raise BadFile("a varint longer than 10 bytes")


def fields(buf):
    """(field number, wire type, value) of a message: ints for varints, bytes for the rest."""
    at = 0
    while at < len(buf):
        key, at = varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(buf, at)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = buf[at:at + size], at + size
            if len(value) != size:
                raise BadFile(f"field {number}: a fixed-size value runs past its message")
        elif wire == 2:
            size, at = varint(buf, at)
            value, at = buf[at:at + size], at + size
            if len(value) != size:
                raise BadFile(f"field {number}: {size} bytes run past its message")
        else:
            raise BadFile(f"field {number}: wire type {wire}, which no field of these messages has")
        yield number, wire, value


def expect(number, wire, want, message):
    if wire != want:
        raise BadFile(f"{message} field {number}: wire type {wire}, expected {want}")


def summary_value(buf):
    """Summary.Value: tag = 1 (string), simple_value = 2 (float), which must be present."""
    tag, value = None, None
    for number, wire, v in fields(buf):
        if number == 1:
            expect(number, wire, 2, "Summary.Value")
            tag = v.decode("utf-8")
        elif number == 2:
            expect(number, wire, 5, "Summary.Value")
            (value,) = struct.unpack("<f", v)
        else:
            raise BadFile(f"Summary.Value has field {number}, not a tag or simple_value")
    if tag is None or value is None:
        raise BadFile(f"a Summary.Value without {'a tag' if tag is None else 'a simple_value'}")
    return [tag, value]


def event(buf):
    """Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5 (Summary,
    whose field 1 is the repeated Value)."""
    out = {"wall_time": 0.0, "step": 0}
    for number, wire, v in fields(buf):
        if number == 1:
            expect(number, wire, 1, "Event")
            (out["wall_time"],) = struct.unpack("<d", v)
        elif number == 2:
            expect(number, wire, 0, "Event")
            out["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif number == 3:
            expect(number, wire, 2, "Event")
            out["file_version"] = v.decode("utf-8")
        elif number == 5:
            expect(number, wire, 2, "Event")
            values = out.setdefault("values", [])
            for n, w, value in fields(v):
                if n != 1:
                    raise BadFile(f"Summary has field {n}, not a value")
                expect(n, w, 2, "Summary")
                values.append(summary_value(value))
        else:
            raise BadFile(f"Event has field {number}, which the scalar writer does not write")
    if ("file_version" in out) == ("values" in out):
        raise BadFile("an Event with neither or both of file_version and summary")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[-1].strip())
    assert crc32c(b"123456789") == 0xE3069283  # CRC-32C's check value
    path = sys.argv[1]
    with open(path, "rb") as f:
        blob = f.read()
    try:
        events = [event(data) for data in records(blob)]
    except BadFile as e:
        print(f"{path}: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(events))


if __name__ == "__main__":
    main()
