import { clientSuite } from './e2e-suite';

clientSuite('chat-completions');
