import { kbStream, pageStream, personalKbKey, type KnowledgeEvent, type PageContent } from '../../events/catalog';
import type { EventStore } from '../../events/store/port';
import type { Result } from '../ledger';
import type { Ledger } from '../ledger';
import { CommandHandler } from '../handle-command';

/** Page states cached per process (each holds a page body). */
export const PAGE_STATES_KEPT = 256;
import { kbDecider, pageDecider, type KbCommand, type KbState, type PageCommand, type PageState } from './decider';

const unixNow = () => Math.floor(Date.now() / 1000);

/** Knowledge bases and pages: owned by an account, changed through the admin API and
 * the import command, read through the projections. */
export class KnowledgeService {
  private readonly kbs: CommandHandler<KbCommand, KbState, KnowledgeEvent>;
  private readonly pages: CommandHandler<PageCommand, PageState, KnowledgeEvent>;

  constructor(
    store: EventStore,
    private readonly ledger: Ledger,
    private readonly now: () => number = unixNow,
  ) {
    this.kbs = new CommandHandler(store, kbDecider);
    // A page's state holds its body (up to 2,000,000 characters): a few hundred are kept, not 10,000.
    this.pages = new CommandHandler(store, pageDecider, PAGE_STATES_KEPT);
  }

  private async accountExists(accountId: string) {
    return (await this.ledger.wallet(accountId)).status !== 'none';
  }

  async createKb(ownerAccountId: string, kbId: string, title: string, readers: readonly string[]): Promise<Result<{ state: KbState }>> {
    if (!(await this.accountExists(ownerAccountId))) return { ok: false, error: { code: 'account_not_found', message: 'account not found' } };
    const unknownReaders = await this.unknownAccounts(readers);
    if (unknownReaders) return unknownReaders;
    const handled = await this.kbs.handle(kbStream(kbId), { type: 'CreateKnowledgeBase', kbId, ownerAccountId, title, readers, now: this.now() });
    return handled.ok ? { ok: true, position: handled.position, state: handled.state } : handled;
  }

  private async unknownAccounts(accountIds: readonly string[]): Promise<{ ok: false; error: { code: string; message: string } } | null> {
    const unknown: string[] = [];
    for (const id of accountIds) if (!(await this.accountExists(id))) unknown.push(id);
    return unknown.length ? { ok: false, error: { code: 'invalid_kb', message: `reader accounts not found: ${unknown.join(', ')}` } } : null;
  }

  /** The stream key of a base the account owns, or an error. `default` is the account's own. */
  private async ownedKbKey(ownerAccountId: string, kbId: string): Promise<Result<{ kbKey: string }>> {
    if (!(await this.accountExists(ownerAccountId))) return { ok: false, error: { code: 'account_not_found', message: 'account not found' } };
    if (kbId === 'default') return { ok: true, position: null, kbKey: personalKbKey(ownerAccountId) };
    const kb = (await this.kbs.load(kbStream(kbId))).state;
    if (!kb.exists || kb.ownerAccountId !== ownerAccountId)
      return { ok: false, error: { code: 'kb_not_found', message: `account ${ownerAccountId} has no knowledge base ${kbId}` } };
    return { ok: true, position: null, kbKey: kbId };
  }

  async changeKb(ownerAccountId: string, kbId: string, change: { title?: string; readers?: readonly string[] }): Promise<Result<{ state: KbState }>> {
    const owned = await this.ownedKbKey(ownerAccountId, kbId);
    if (!owned.ok) return owned;
    if (kbId === 'default') return { ok: false, error: { code: 'invalid_kb', message: 'the personal default base has no title or readers to change' } };
    const unknownReaders = await this.unknownAccounts(change.readers ?? []);
    if (unknownReaders) return unknownReaders;
    const handled = await this.kbs.handle(kbStream(kbId), { type: 'ChangeKnowledgeBase', ...change, now: this.now() });
    return handled.ok ? { ok: true, position: handled.position, state: handled.state } : handled;
  }

  async upsertPage(ownerAccountId: string, kbId: string, pageId: string, content: PageContent): Promise<Result<{ created: boolean }>> {
    const owned = await this.ownedKbKey(ownerAccountId, kbId);
    if (!owned.ok) return owned;
    const stream = pageStream(owned.kbKey, pageId);
    const before = (await this.pages.load(stream)).state.exists;
    const handled = await this.pages.handle(stream, {
      type: 'UpsertPage',
      kbKey: owned.kbKey,
      kbId,
      ownerAccountId,
      pageId,
      content,
      now: this.now(),
    });
    return handled.ok ? { ok: true, position: handled.position, created: !before } : handled;
  }

  async deletePage(ownerAccountId: string, kbId: string, pageId: string): Promise<Result<object>> {
    const owned = await this.ownedKbKey(ownerAccountId, kbId);
    if (!owned.ok) return owned;
    const handled = await this.pages.handle(pageStream(owned.kbKey, pageId), { type: 'DeletePage', now: this.now() });
    return handled.ok ? { ok: true, position: handled.position } : handled;
  }
}
