import { clientSuite } from './sdk-suite';

clientSuite('messages');
