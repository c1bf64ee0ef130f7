// The CLI's usage text, each command's own part of it (what a usage error prints), and the error itself.
// Plain text, nothing imported: `gateway --help` and a usage error load no more than this.

/** The projections' names (src/projections/index.ts; its unit spec checks they match). */
export const PROJECTION_NAMES = ['accounts', 'keys', 'ledger', 'audit', 'knowledge', 'call-log', 'tasks', 'enterprises', 'channels', 'payments'];

// Each command starts a line at column 2; the lines after it indented further are its own.
export const USAGE = `Usage: gateway <command> [options]
       gateway --version | --help

Run the gateway, or the storage directly (in embedded mode, with the server stopped):
  serve                                   run the gateway (env: PORT, HOST, DATA_DIR, DATABASE_URL, ...)
  projections rebuild [NAME]              drop and replay one projection, or all (${PROJECTION_NAMES.join(', ')})
  projections status                      checkpoint and parked events of each projection
  projections run                         apply the log to the read models until SIGINT/SIGTERM: the worker for
                                          gateways started with PROJECTIONS=external (Postgres only)
  ledger verify [--account ID]            replay the events and compare with the projections; exit 1 on a difference
  ledger verify --parked                  list the events the projections parked (could not apply); exit 1 if any

Talk to a running gateway's admin API (GATEWAY_URL, default http://HOST:PORT, and ADMIN_TOKEN or the token
saved in DATA_DIR). Lists print a table, other commands the API's JSON; --json prints the API's JSON for
every command, and an error's JSON body on stderr:
  channels list [--json]                  each channel's status, who disabled it, success rate, latency, last error
  channels disable ID                     no call or probe goes to the channel until it is enabled
  channels enable ID                      route to the channel again (its cooldown and backoff forgotten)
  channels probe ID                       one probe of the channel now, with its own key
  config reload                           re-read the config file, validate it whole and apply it (as SIGHUP)
  ledger rerate --model M --from T --to T --price FILE [--apply --reference R] [--reason TEXT]
                                          price a model's billed calls in [from, to) again (T: Unix seconds, RFC 3339
                                          or YYYY-MM-DD; FILE: YAML/JSON price object); prints every affected call and
                                          the difference per account; --apply appends one adjustment per account,
                                          idempotent on R (admin API: POST /admin/v1/rerates)
  payments list [--account ID] [--json]   paid top-ups (newest first): account, amount, status, refunded, provider
  payments refund PAYMENT_ID [AMOUNT_USD] refund through the payment provider (default: what is left); the
                                          provider's webhook then debits the wallet
  payments webhooks [--json]              webhook deliveries set aside: unmatched (never opened here) or failed
  accounts create NAME [--group GROUP]
  accounts list [--json]
  accounts show ID
  accounts topup ID AMOUNT_USD [--reference TEXT]
  accounts limits ID [--rpm N|none] [--concurrency N|none]   (a limit not given keeps its value)
  accounts group ID GROUP|none            bind the account to a channel group (none: unbind, every channel)
  accounts deactivate ID [--reason TEXT]
  accounts reactivate ID
  accounts ledger ID
  accounts login-link ID                  a one-time sign-in link to the account's web console (/console/), 15 minutes
  accounts signups [--json]               accounts their holders opened at /console/sign-up, newest first: address,
                                          verified or not, trial credit granted or not (config key signup.enabled switches it)
  keys create ACCOUNT_ID --name NAME [--models a,b|none] [--expires-at UNIX] [--spend-cap USD] [--group GROUP] [--disabled]
  keys list ACCOUNT_ID [--json]
  keys update KEY_ID [--name NAME] [--models a,b|all|none] [--expires-at UNIX|never] [--spend-cap USD|none]
                     [--group GROUP|none] [--enable|--disable]   (a key's group wins over its account's)
  keys revoke KEY_ID
  keys delete KEY_ID
  keys reveal KEY_ID
  kb create ACCOUNT_ID KB_ID --title TITLE [--readers ACCOUNT,ACCOUNT]
  kb update ACCOUNT_ID KB_ID [--title TITLE] [--readers ACCOUNT,ACCOUNT]
  kb import ACCOUNT_ID DIR [--kb KB_ID] [--no-sources]
                                          import Markdown files (YAML front matter optional) into a base
                                          (default: the account's personal base "default")
  enterprise set ACCOUNT_ID [--models a,b|all] [--default-model MODEL]
                                          make an account an enterprise (its wallet pays for its agents)
  enterprise show ACCOUNT_ID
  enterprise member ACCOUNT_ID MEMBER_ID admin|member
  enterprise remove-member ACCOUNT_ID MEMBER_ID
  enterprise requests ACCOUNT_ID [--status pending|approved|rejected|all] [--json]
  enterprise audit ACCOUNT_ID [--json]
  agents create ACCOUNT_ID --name NAME --creator ACCOUNT --prompt TEXT [--model MODEL] [--web-search] [--drawing]
                [--kbs a,b] [--temperature T] [--unpublished]
  agents list ACCOUNT_ID [--json]
  agents update AGENT_ID [--name NAME] [--prompt TEXT] [--model MODEL|none] [--kbs a,b] [--temperature T|none]
                [--web-search|--no-web-search] [--drawing|--no-drawing] [--publish|--unpublished]
  agents delete AGENT_ID
  agents key AGENT_ID --name NAME --by ADMIN [--spend-cap USD]
                                          an enterprise admin issues an agent key
  agents request-key AGENT_ID --name NAME --by MEMBER --spend-cap USD
  agents approve REQUEST_ID --by ADMIN    the cap moves into the key's escrow (402 when unfunded)
  agents reject REQUEST_ID --by ADMIN [--reason TEXT]
`;

/** A command line the CLI cannot run: exit 2, with that command's own usage. */
export class UsageError extends Error {}

/** The entries of USAGE: each command's lines (its line and those indented under it). */
function entries(): { words: string[]; lines: string[] }[] {
  const found: { words: string[]; lines: string[] }[] = [];
  for (const line of USAGE.split('\n')) {
    if (/^ {2}\S/.test(line)) found.push({ words: line.trim().split(/\s+/), lines: [line] });
    else if (/^ {3,}\S/.test(line) && found.length > 0) found[found.length - 1]!.lines.push(line);
    else found.push({ words: [], lines: [] });
  }
  return found.filter((e) => e.words.length > 0);
}

/**
 * The short usage of the command `words` names (`['accounts', 'limits']`): its entries of USAGE; for a
 * group alone or a group with an unknown action, every command of the group; null when no command starts so.
 */
export function usageOf(words: readonly string[]): string | null {
  const all = entries();
  const [group, action] = words;
  if (group === undefined) return null;
  const exact = all.filter((e) => e.words[0] === group && action !== undefined && e.words[1] === action);
  const chosen = exact.length > 0 ? exact : all.filter((e) => e.words[0] === group);
  if (chosen.length === 0) return null;
  // Each command after "Usage: gateway " or under it, the lines of its own kept in line with it.
  const shift = ' '.repeat('Usage: gateway '.length - 2);
  return chosen.flatMap((e, i) => e.lines.map((line, j) => (j > 0 ? `${shift}${line}` : `${i === 0 ? 'Usage:' : '      '} gateway ${line.slice(2)}`))).join('\n');
}
