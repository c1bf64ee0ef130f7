import { describe, expect, it } from 'vitest';
import { StatementNames } from './sql';

describe('StatementNames', () => {
  it('names a statement text the second time it is seen, and keeps that name', () => {
    const names = new StatementNames();
    expect(names.query('SELECT $1', [1])).toEqual({ text: 'SELECT $1', values: [1] });
    const second = names.query('SELECT $1', [2]);
    expect(second).toEqual({ name: expect.any(String), text: 'SELECT $1', values: [2] });
    expect(names.query('SELECT $1', [3]).name).toBe(second.name);
  });

  it('gives different texts different names', () => {
    const names = new StatementNames();
    for (const text of ['SELECT $1', 'SELECT $1 + 1', 'SELECT $1']) names.query(text, [0]);
    names.query('SELECT $1 + 1', [0]);
    expect(names.query('SELECT $1', [0]).name).not.toBe(names.query('SELECT $1 + 1', [0]).name);
  });

  it('never names a text without parameters (the simple protocol runs several statements at once)', () => {
    const names = new StatementNames();
    for (let i = 0; i < 3; i++) expect(names.query('BEGIN; SELECT 1', [])).toEqual({ text: 'BEGIN; SELECT 1' });
  });

  it('runs texts beyond its limit unnamed, so texts built with literals cannot fill the server', () => {
    const names = new StatementNames(2);
    for (const text of ['A $1', 'B $1', 'C $1', 'A $1', 'B $1', 'C $1']) names.query(text, [0]);
    expect(names.query('A $1', [0]).name).toBeDefined();
    expect(names.query('B $1', [0]).name).toBeDefined();
    expect(names.query('C $1', [0]).name).toBeUndefined();
  });
});
