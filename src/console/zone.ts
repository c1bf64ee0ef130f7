/** Call-log filter dates read in the viewer's time zone (an IANA name console.js sends; UTC without it). */

/** Whether Node's Intl knows the zone (`Europe/Paris`, `UTC`, …). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at an instant, in seconds (east positive). */
export function offsetAt(unixSeconds: number, timeZone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(new Date(unixSeconds * 1000))
      .map((p) => [p.type, p.value]),
  );
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second)) / 1000;
  return wall - unixSeconds;
}

/** The instant a `YYYY-MM-DD` day begins in the zone (Unix seconds). Checked again at the found instant,
 * so a day whose offset differs from the previous midnight's (a DST change) still starts right. */
export function startOfDay(date: string, timeZone: string): number {
  const utcMidnight = Date.parse(`${date}T00:00:00Z`) / 1000;
  let at = utcMidnight - offsetAt(utcMidnight, timeZone);
  at = utcMidnight - offsetAt(at, timeZone);
  return at;
}
