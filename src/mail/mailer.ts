import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';

// Mail to account holders (a sign-up's verification link, a password reset): through SMTP with
// nodemailer when SMTP_URL is set; else written as .eml files to DATA_DIR/outbox with the link logged,
// so that the zero-setup demo works end to end without a mail server.

export interface Mail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  /** The link the mail carries: logged only when the mail goes to the outbox (no SMTP: nobody else gets it). */
  readonly link?: string;
}

export interface MailLog {
  info(fields: Record<string, unknown>, message: string): void;
}

export interface Mailer {
  /** `smtp` or `outbox`. */
  readonly kind: 'smtp' | 'outbox';
  send(mail: Mail): Promise<void>;
  close(): void;
}

export interface MailSettings {
  readonly smtpUrl: string | undefined;
  readonly mailFrom: string;
  readonly dataDir: string;
}

export function mailerOf(settings: MailSettings, log: () => MailLog | null): Mailer {
  if (settings.smtpUrl) return smtpMailer(nodemailer.createTransport(settings.smtpUrl), settings.mailFrom);
  return outboxMailer(join(settings.dataDir, 'outbox'), settings.mailFrom, log);
}

function smtpMailer(transport: Transporter, from: string): Mailer {
  return {
    kind: 'smtp',
    async send(mail) {
      await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close: () => transport.close(),
  };
}

/** The same message nodemailer would send, as an .eml file (a mail client opens it). */
function outboxMailer(folder: string, from: string, log: () => MailLog | null): Mailer {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    kind: 'outbox',
    async send(mail) {
      const info = await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
      await mkdir(folder, { recursive: true, mode: 0o700 });
      const file = join(folder, `${new Date().toISOString().replaceAll(':', '-')}-${randomBytes(4).toString('hex')}.eml`);
      await writeFile(file, info.message as Buffer, { mode: 0o600 });
      log()?.info({ to: mail.to, subject: mail.subject, file, ...(mail.link ? { link: mail.link } : {}) }, 'mail written to the outbox (no SMTP_URL)');
    },
    close: () => transport.close(),
  };
}
