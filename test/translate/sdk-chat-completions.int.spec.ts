import { clientSuite } from './sdk-suite';

clientSuite('chat-completions');
