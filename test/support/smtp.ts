import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** A mail the local SMTP server received, parsed. */
export interface ReceivedMail {
  readonly to: string;
  readonly from: string;
  readonly subject: string;
  readonly text: string;
  /** The first console link in the text (`http://…/console/…#code`), if any. */
  readonly link: string | null;
}

export interface LocalSmtp {
  /** `smtp://127.0.0.1:{port}`: the gateway's SMTP_URL. */
  readonly url: string;
  readonly mails: ReceivedMail[];
  /** The next mail to `to` not yet taken (waits up to 10 s). */
  next(to: string, subject?: RegExp): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/** A local SMTP server (smtp-server) that keeps every mail: tests read the gateway's mail from it. */
export async function startLocalSmtp(): Promise<LocalSmtp> {
  const mails: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          const text = parsed.text ?? '';
          const to = Array.isArray(parsed.to) ? parsed.to.map((a) => a.text).join(', ') : (parsed.to?.text ?? '');
          mails.push({ to, from: parsed.from?.text ?? '', subject: parsed.subject ?? '', text, link: /https?:\/\/\S+\/console\/\S+/.exec(text)?.[0] ?? null });
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async next(to, subject) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const mail = mails.find((m) => !taken.has(m) && m.to.includes(to) && (!subject || subject.test(m.subject)));
        if (mail) {
          taken.add(mail);
          return mail;
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${to}${subject ? ` (${subject})` : ''}; got ${JSON.stringify(mails.map((m) => [m.to, m.subject]))}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
