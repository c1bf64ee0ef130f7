import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SettingError, settingsFromEnv } from './settings';

describe('settingsFromEnv', () => {
  it('takes an empty variable as an unset one: PORT 8080, not a random port; DATA_DIR ./data, not the working directory', () => {
    const settings = settingsFromEnv({ PORT: '', HOST: ' ', DATA_DIR: '', LOG_LEVEL: '' });
    expect(settings.port).toBe(8080);
    expect(settings.host).toBe('127.0.0.1');
    expect(settings.dataDir).toBe(resolve('./data'));
    expect(settings.logLevel).toBe('info');
    expect(settingsFromEnv({ PORT: ' 9090 ' }).port).toBe(9090);
  });

  it('refuses a PORT that is not a TCP port, and an unknown LOG_LEVEL, naming the setting', () => {
    for (const port of ['0', '65536', 'eighty', '80.5', '-1', '0x50'])
      expect(() => settingsFromEnv({ PORT: port })).toThrow(new SettingError(`PORT must be a port number from 1 to 65535, not "${port}"`));
    expect(() => settingsFromEnv({ LOG_LEVEL: 'verbose' })).toThrow(/LOG_LEVEL must be one of/);
  });

  it('reads SHUTDOWN_GRACE_S (default 30) and READY_MAX_PROJECTION_LAG_S (default 60, or off), refusing anything else', () => {
    expect(settingsFromEnv({})).toMatchObject({ shutdownGraceS: 30, readyMaxProjectionLagS: 60 });
    expect(settingsFromEnv({ SHUTDOWN_GRACE_S: '2.5', READY_MAX_PROJECTION_LAG_S: '0' })).toMatchObject({ shutdownGraceS: 2.5, readyMaxProjectionLagS: 0 });
    expect(settingsFromEnv({ SHUTDOWN_GRACE_S: '', READY_MAX_PROJECTION_LAG_S: 'OFF' })).toMatchObject({ shutdownGraceS: 30, readyMaxProjectionLagS: null });
    for (const value of ['-1', 'soon', '1e3', '30s'])
      expect(() => settingsFromEnv({ SHUTDOWN_GRACE_S: value })).toThrow(new SettingError(`SHUTDOWN_GRACE_S must be a number of seconds (0 or more), not "${value}"`));
    expect(() => settingsFromEnv({ READY_MAX_PROJECTION_LAG_S: 'never' })).toThrow(/READY_MAX_PROJECTION_LAG_S must be a number of seconds or "off"/);
  });

  it('reads UPLOAD_SPOOL_LIMIT_MB (default 1024 MB), refusing anything but whole MB from 2', () => {
    expect(settingsFromEnv({}).uploadSpoolLimitMb).toBe(1024);
    expect(settingsFromEnv({ UPLOAD_SPOOL_LIMIT_MB: ' 4 ' }).uploadSpoolLimitMb).toBe(4);
    for (const value of ['1', '0', '1.5', 'lots', '-2'])
      expect(() => settingsFromEnv({ UPLOAD_SPOOL_LIMIT_MB: value })).toThrow(new SettingError(`UPLOAD_SPOOL_LIMIT_MB must be a whole number of MB from 2 to 1048576, not "${value}"`));
  });

  it('reads LEDGER_CALL_COMMIT: unset (or empty) leaves it to the event store (defaultCallCommit), anything but sync or async is refused', () => {
    expect(settingsFromEnv({}).callCommit).toBeUndefined();
    expect(settingsFromEnv({ LEDGER_CALL_COMMIT: '' }).callCommit).toBeUndefined();
    expect(settingsFromEnv({ LEDGER_CALL_COMMIT: 'async' }).callCommit).toBe('async');
    expect(settingsFromEnv({ LEDGER_CALL_COMMIT: ' sync ' }).callCommit).toBe('sync');
    expect(() => settingsFromEnv({ LEDGER_CALL_COMMIT: 'off' })).toThrow(new SettingError('LEDGER_CALL_COMMIT must be "sync" or "async", not "off"'));
  });

  it('reads TASK_POLL_INTERVAL_MS (default 5000), whole milliseconds from 10 to an hour', () => {
    expect(settingsFromEnv({}).taskPollIntervalMs).toBe(5000);
    expect(settingsFromEnv({ TASK_POLL_INTERVAL_MS: ' 250 ' }).taskPollIntervalMs).toBe(250);
    expect(settingsFromEnv({ TASK_POLL_INTERVAL_MS: '' }).taskPollIntervalMs).toBe(5000);
    for (const value of ['0', '9', '2.5', '-100', '5s', '3600001'])
      expect(() => settingsFromEnv({ TASK_POLL_INTERVAL_MS: value })).toThrow(
        new SettingError(`TASK_POLL_INTERVAL_MS must be a whole number of milliseconds from 10 to 3600000, not "${value}"`),
      );
  });

  it('takes SMTP_URL as an smtp:// or smtps:// URL (unset: the outbox) and MAIL_FROM with its default', () => {
    expect(settingsFromEnv({}).smtpUrl).toBeUndefined();
    expect(settingsFromEnv({}).mailFrom).toBe('Model gateway <gateway@localhost>');
    expect(settingsFromEnv({ SMTP_URL: 'smtps://u:p@mail.example.com:465', MAIL_FROM: 'Ops <ops@example.com>' })).toMatchObject({ smtpUrl: 'smtps://u:p@mail.example.com:465', mailFrom: 'Ops <ops@example.com>' });
    for (const url of ['http://mail.example.com', 'mail.example.com:25']) expect(() => settingsFromEnv({ SMTP_URL: url })).toThrow(/SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/);
  });
});
