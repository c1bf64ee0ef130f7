import { clientSuite } from './sdk-suite';

clientSuite('generate-content');
