import { describe, expect, it } from 'vitest';
import { backoffDelays } from './backoff.js';
import { UrlBalancer, normaliseUrl } from './url-balancer.js';

describe('backoffDelays', () => {
  it('doubles from initialMs and caps at maxMs', () => {
    expect(backoffDelays()).toEqual([200, 400, 800]);
    expect(backoffDelays({ retries: 5, initialMs: 100, factor: 3, maxMs: 1000 })).toEqual([
      100, 300, 900, 1000, 1000,
    ]);
    expect(backoffDelays({ retries: 0 })).toEqual([]);
  });
  it('names the bad option', () => {
    expect(() => backoffDelays({ initialMs: -1 })).toThrow(/backoff.initialMs/);
  });
});

describe('UrlBalancer', () => {
  it('cycles round-robin and skips excluded URLs', () => {
    const b = new UrlBalancer(['a:1', 'b:2', 'c:3']);
    expect(b.urls).toEqual(['http://a:1', 'http://b:2', 'http://c:3']);
    expect([b.pick(), b.pick(), b.pick(), b.pick()]).toEqual([0, 1, 2, 0]);
    expect(b.pick(new Set([1]))).toBe(2);
    expect(b.pick(new Set([0, 1, 2]))).toBe(0);
  });
  it('least-loaded takes the URL with the fewest requests in flight', () => {
    const b = new UrlBalancer(['a', 'b', 'c'], 'least-loaded');
    b.acquire(0);
    b.acquire(0);
    b.acquire(1);
    expect(b.pick()).toBe(2);
    b.acquire(2);
    b.acquire(2);
    expect(b.pick()).toBe(1);
    b.release(0);
    b.release(0);
    expect(b.pick()).toBe(0);
  });
  it('rejects an empty list and a malformed URL', () => {
    expect(() => new UrlBalancer([])).toThrow(/router URL/);
    expect(() => normaliseUrl('http://')).toThrow(/not a valid URL/);
    expect(normaliseUrl('http://127.0.0.1:30000/')).toBe('http://127.0.0.1:30000');
  });
});
