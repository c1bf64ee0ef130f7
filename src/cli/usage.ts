// The CLI's usage text (printed with every usage error) and the error that prints it.
import { allProjections } from '../projections';

export const USAGE = `Usage: gateway <command> [options]

  serve                                   run the gateway (env: PORT, HOST, DATA_DIR, DATABASE_URL, ...)
  projections rebuild [NAME]              drop and replay one projection, or all (${allProjections.map((p) => p.name).join(', ')})
  projections status                      checkpoint and parked events of each projection
  projections run                         apply the log to the read models until SIGINT/SIGTERM: the worker for
                                          gateways started with PROJECTIONS=external (Postgres only)
  ledger verify [--account ID]            replay the events and compare with the projections; exit 1 on a difference
  ledger rerate --model M --from T --to T --price FILE [--apply --reference R] [--reason TEXT]
                                          price a model's billed calls in [from, to) again (T: Unix seconds, RFC 3339
                                          or YYYY-MM-DD; FILE: YAML/JSON price object); prints every affected call and
                                          the difference per account; --apply appends one adjustment per account,
                                          idempotent on R (admin API: POST /admin/v1/rerates)
  ledger verify --parked                  list the events the projections parked (could not apply); exit 1 if any

  accounts create NAME [--group GROUP]    (these talk to a running gateway's admin API:
  accounts list                            GATEWAY_URL, default http://HOST:PORT, and ADMIN_TOKEN
  accounts show ID                         or the token saved in DATA_DIR)
  accounts topup ID AMOUNT_USD [--reference TEXT]
  accounts limits ID [--rpm N|none] [--concurrency N|none]   (a limit not given keeps its value)
  accounts group ID GROUP|none            bind the account to a channel group (none: unbind, every channel)
  accounts deactivate ID [--reason TEXT]
  accounts reactivate ID
  accounts ledger ID
  accounts login-link ID                  a one-time sign-in link to the account's web console (/console/), 15 minutes
  keys create ACCOUNT_ID --name NAME [--models a,b|none] [--expires-at UNIX] [--spend-cap USD] [--group GROUP] [--disabled]
  keys list ACCOUNT_ID
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
  enterprise requests ACCOUNT_ID [--status pending|approved|rejected|all]
  enterprise audit ACCOUNT_ID
  agents create ACCOUNT_ID --name NAME --creator ACCOUNT --prompt TEXT [--model MODEL] [--web-search] [--drawing]
                [--kbs a,b] [--temperature T] [--unpublished]
  agents list ACCOUNT_ID
  agents update AGENT_ID [--name NAME] [--prompt TEXT] [--model MODEL|none] [--kbs a,b] [--temperature T|none]
                [--web-search|--no-web-search] [--drawing|--no-drawing] [--publish|--unpublished]
  agents delete AGENT_ID
  agents key AGENT_ID --name NAME --by ADMIN [--spend-cap USD]
                                          an enterprise admin issues an agent key
  agents request-key AGENT_ID --name NAME --by MEMBER --spend-cap USD
  agents approve REQUEST_ID --by ADMIN    the cap moves into the key's escrow (402 when unfunded)
  agents reject REQUEST_ID --by ADMIN [--reason TEXT]
`;

export class UsageError extends Error {}
