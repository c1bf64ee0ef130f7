import type { KnowledgeEvent, PageContent } from '../../events/catalog';
import { accept, assertNever, refuse, type Decider, type Decision } from '../decision';

export const KB_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const PAGE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export type KnowledgeErrorCode = 'kb_exists' | 'kb_not_found' | 'invalid_kb' | 'page_not_found' | 'invalid_page';

// ---- a team knowledge base -------------------------------------------------

export interface KbState {
  readonly exists: boolean;
  readonly kbId: string;
  readonly ownerAccountId: string;
  readonly title: string;
  readonly readers: readonly string[];
}

export const initialKbState: KbState = { exists: false, kbId: '', ownerAccountId: '', title: '', readers: [] };

export type KbCommand =
  | { type: 'CreateKnowledgeBase'; kbId: string; ownerAccountId: string; title: string; readers: readonly string[]; now: number }
  | { type: 'ChangeKnowledgeBase'; title?: string; readers?: readonly string[]; now: number };

const uniqueReaders = (readers: readonly string[], owner: string) => [...new Set(readers)].filter((r) => r !== owner).sort();

export const kbDecider: Decider<KbCommand, KbState, KnowledgeEvent, KnowledgeErrorCode> = {
  initialState: initialKbState,
  evolve(state, event) {
    switch (event.type) {
      case 'KnowledgeBaseCreated':
        return {
          exists: true,
          kbId: event.data.kb_id,
          ownerAccountId: event.data.owner_account_id,
          title: event.data.title,
          readers: event.data.reader_account_ids,
        };
      case 'KnowledgeBaseChanged':
        return { ...state, title: event.data.title ?? state.title, readers: event.data.reader_account_ids ?? state.readers };
      default:
        return state;
    }
  },
  decide(command, state): Decision<KnowledgeEvent, KnowledgeErrorCode> {
    switch (command.type) {
      case 'CreateKnowledgeBase':
        if (command.kbId === 'default' || !KB_ID.test(command.kbId))
          return refuse('invalid_kb', 'kb_id must be 1-64 lowercase letters, digits, "-" or "_", and not "default" (every account has its own default base)');
        if (state.exists) return refuse('kb_exists', `knowledge base ${command.kbId} already exists`);
        return accept({
          type: 'KnowledgeBaseCreated',
          data: {
            kb_id: command.kbId,
            owner_account_id: command.ownerAccountId,
            title: command.title,
            reader_account_ids: uniqueReaders(command.readers, command.ownerAccountId),
            at: command.now,
          },
        });
      case 'ChangeKnowledgeBase': {
        if (!state.exists) return refuse('kb_not_found', 'knowledge base not found');
        const readers = command.readers ? uniqueReaders(command.readers, state.ownerAccountId) : undefined;
        const titleChanged = command.title !== undefined && command.title !== state.title;
        const readersChanged = readers !== undefined && readers.join('\n') !== state.readers.join('\n');
        if (!titleChanged && !readersChanged) return accept();
        return accept({
          type: 'KnowledgeBaseChanged',
          data: { ...(titleChanged ? { title: command.title } : {}), ...(readersChanged ? { reader_account_ids: readers } : {}), at: command.now },
        });
      }
      default:
        return assertNever(command);
    }
  },
};

// ---- a page ----------------------------------------------------------------

export interface PageState {
  readonly exists: boolean;
  readonly content: PageContent | null;
}

export const initialPageState: PageState = { exists: false, content: null };

export type PageCommand =
  | { type: 'UpsertPage'; kbKey: string; kbId: string; ownerAccountId: string; pageId: string; content: PageContent; now: number }
  | { type: 'DeletePage'; now: number };

const sameContent = (a: PageContent, b: PageContent) => JSON.stringify(a) === JSON.stringify(b);

export const pageDecider: Decider<PageCommand, PageState, KnowledgeEvent, KnowledgeErrorCode> = {
  initialState: initialPageState,
  evolve(state, event) {
    switch (event.type) {
      case 'PageUpserted': {
        const { kb_key: _k, kb_id: _i, owner_account_id: _o, page_id: _p, at: _a, ...content } = event.data;
        return { exists: true, content };
      }
      case 'PageDeleted':
        return initialPageState;
      default:
        return state;
    }
  },
  decide(command, state): Decision<KnowledgeEvent, KnowledgeErrorCode> {
    switch (command.type) {
      case 'UpsertPage':
        if (!PAGE_ID.test(command.pageId))
          return refuse('invalid_page', 'page id must be a slug: letters, digits, ".", "-" or "_", at most 200 characters');
        // An identical re-import appends nothing.
        if (state.exists && state.content && sameContent(state.content, command.content)) return accept();
        return accept({
          type: 'PageUpserted',
          data: {
            kb_key: command.kbKey,
            kb_id: command.kbId,
            owner_account_id: command.ownerAccountId,
            page_id: command.pageId,
            ...command.content,
            at: command.now,
          },
        });
      case 'DeletePage':
        if (!state.exists) return refuse('page_not_found', 'page not found');
        return accept({ type: 'PageDeleted', data: { at: command.now } });
      default:
        return assertNever(command);
    }
  },
};
