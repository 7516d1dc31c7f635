import { createReadStream } from 'node:fs';
import { DataError } from '../errors.js';

const NEWLINE = 10;

/**
 * Streams `file` as text, about `chunkBytes` at a time (a leading BOM is dropped). Bytes that
 * are not UTF-8 fail with INVALID_UTF8 naming the file, the line and the byte offset, where
 * Node's own decoding would turn them into U+FFFD without a word.
 */
export async function* readUtf8(file: string, chunkBytes = 1 << 20): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const stream = createReadStream(file, { highWaterMark: chunkBytes });
  let offset = 0; // bytes read before the current chunk
  let tail: Uint8Array = new Uint8Array(0); // the previous chunk's last bytes: the decoder may hold up to 3 of them
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let text: string;
      try {
        text = decoder.decode(chunk, { stream: true });
      } catch {
        const region = Buffer.concat([tail, chunk]);
        const bad = firstInvalidByte(region);
        throw await invalidUtf8(file, offset - tail.length + bad, region.subarray(bad, bad + 4));
      }
      offset += chunk.length;
      tail = chunk.subarray(Math.max(0, chunk.length - 3));
      if (text !== '') yield text;
    }
    let rest: string;
    try {
      rest = decoder.decode();
    } catch {
      // a multi-byte character cut off by the end of the file: point at its first byte
      let lead = tail.length - 1;
      while (lead > 0 && (tail[lead] as number) >> 6 === 2) lead -= 1;
      throw await invalidUtf8(
        file,
        offset - tail.length + lead,
        tail.subarray(lead),
        'the file ends inside a character',
      );
    }
    if (rest !== '') yield rest;
  } finally {
    stream.destroy();
  }
}

/**
 * Offset in `bytes` of the byte at which decoding first fails. `bytes` may start with the
 * continuation bytes of a character begun before it (skipped). Binary search on prefixes
 * decoded in streaming mode, where an unfinished last character is not yet an error.
 */
function firstInvalidByte(bytes: Uint8Array): number {
  let start = 0;
  while (start < 3 && start < bytes.length && (bytes[start] as number) >> 6 === 2) start += 1;
  const fails = (end: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(start, end), {
        stream: true,
      });
      return false;
    } catch {
      return true;
    }
  };
  let lo = start + 1;
  let hi = bytes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fails(mid)) hi = mid;
    else lo = mid + 1;
  }
  const bad = lo - 1;
  // a character cut short (e.g. a Latin-1 é: 0xe9 then ASCII) shows at the byte after it: point at its lead byte
  let lead = bad - 1;
  while (lead >= start && bad - lead <= 3 && (bytes[lead] as number) >> 6 === 2) lead -= 1;
  const b = lead >= start ? (bytes[lead] as number) : 0;
  const size = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
  return bad - lead < size ? lead : bad;
}

/**
 * The error for invalid UTF-8 at byte `at` of `file` (`bytes` from there on): counts the lines
 * before it (an error path, so the file is read again).
 */
async function invalidUtf8(
  file: string,
  at: number,
  bytes: Uint8Array,
  why?: string,
): Promise<DataError> {
  let line = 1;
  if (at > 0) {
    for await (const chunk of createReadStream(file, {
      start: 0,
      end: at - 1,
    }) as AsyncIterable<Buffer>) {
      for (let i = chunk.indexOf(NEWLINE); i >= 0; i = chunk.indexOf(NEWLINE, i + 1)) line += 1;
    }
  }
  const hex = [...bytes].map((b) => `0x${b.toString(16).padStart(2, '0')}`).join(' ');
  return new DataError(
    'INVALID_UTF8',
    `${file} line ${line} (byte ${at}) is not valid UTF-8${why ? ` (${why})` : ''}: bytes ${hex}. ` +
      'Convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8 IN > OUT) or fix that line.',
  );
}
