/**
 * Minimal protocol-buffers encoder for the few messages TensorBoard needs
 * (https://protobuf.dev/programming-guides/encoding/): tag = field << 3 | wire type.
 */
export class ProtobufWriter {
  private readonly chunks: number[] = [];

  private varint(value: number | bigint): void {
    let v = BigInt(value);
    if (v < 0n) v = BigInt.asUintN(64, v);
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      this.chunks.push(byte);
    } while (v > 0n);
  }

  private key(field: number, wire: 0 | 1 | 2 | 5): void {
    this.varint((field << 3) | wire);
  }

  /** int64/uint64/bool field (wire type 0). */
  int(field: number, value: number | bigint): this {
    this.key(field, 0);
    this.varint(value);
    return this;
  }

  /** double field (wire type 1, little-endian). */
  double(field: number, value: number): this {
    this.key(field, 1);
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, value, true);
    this.chunks.push(...b);
    return this;
  }

  /** float field (wire type 5, little-endian). */
  float(field: number, value: number): this {
    this.key(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.chunks.push(...b);
    return this;
  }

  /** bytes / string / embedded message field (wire type 2). */
  bytes(field: number, value: Uint8Array | string): this {
    const b = typeof value === 'string' ? new TextEncoder().encode(value) : value;
    this.key(field, 2);
    this.varint(b.length);
    this.chunks.push(...b);
    return this;
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.chunks);
  }
}
