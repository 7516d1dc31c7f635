/**
 * Wire format between two ranks, one frame per message:
 * `[u8 type][u16 keyBytes][u32 payloadBytes][key utf8][payload]`, little endian.
 * The key names the channel (group and op sequence), so ops of different groups can share
 * one connection and arrive in any interleaving.
 */
export const HEADER_BYTES = 7;

export interface Frame {
  type: number;
  key: string;
  /** Owns a fresh, 4-byte aligned ArrayBuffer, so it can be viewed as a Float32Array. */
  payload: Uint8Array;
}

/** Encode a frame header. */
export function frameHeader(type: number, key: string, payloadBytes: number): Buffer {
  const k = Buffer.from(key, 'utf8');
  const h = Buffer.allocUnsafe(HEADER_BYTES + k.length);
  h.writeUInt8(type, 0);
  h.writeUInt16LE(k.length, 1);
  h.writeUInt32LE(payloadBytes, 3);
  k.copy(h, HEADER_BYTES);
  return h;
}

/** Incremental decoder: feed socket chunks, get whole frames; payloads are copied once. */
export class FrameReader {
  private head: Buffer = Buffer.alloc(0);
  private current: { type: number; key: string; payload: Uint8Array; filled: number } | undefined;

  push(chunk: Buffer, onFrame: (f: Frame) => void): void {
    let buf: Buffer = chunk;
    while (buf.length > 0) {
      if (this.current) {
        const c = this.current;
        const n = Math.min(buf.length, c.payload.length - c.filled);
        c.payload.set(buf.subarray(0, n), c.filled);
        c.filled += n;
        buf = buf.subarray(n);
        if (c.filled === c.payload.length) {
          this.current = undefined;
          onFrame({ type: c.type, key: c.key, payload: c.payload });
        }
        continue;
      }
      this.head = this.head.length ? Buffer.concat([this.head, buf]) : buf;
      buf = Buffer.alloc(0);
      if (this.head.length < HEADER_BYTES) return;
      const keyBytes = this.head.readUInt16LE(1);
      if (this.head.length < HEADER_BYTES + keyBytes) return;
      const type = this.head.readUInt8(0);
      const payloadBytes = this.head.readUInt32LE(3);
      const key = this.head.toString('utf8', HEADER_BYTES, HEADER_BYTES + keyBytes);
      buf = this.head.subarray(HEADER_BYTES + keyBytes);
      this.head = Buffer.alloc(0);
      this.current = {
        type,
        key,
        payload: new Uint8Array(new ArrayBuffer(payloadBytes)),
        filled: 0,
      };
      if (payloadBytes === 0) {
        this.current = undefined;
        onFrame({ type, key, payload: new Uint8Array(0) });
      }
    }
  }
}
