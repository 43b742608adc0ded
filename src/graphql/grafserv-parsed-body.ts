import type { IncomingMessage, ServerResponse } from "node:http";
import { getBodyFromFrameworkBody } from "postgraphile/grafserv";
import { NodeGrafservBase } from "postgraphile/grafserv/node";

/**
 * grafserv's Node adaptor for a request whose body the endpoint's steps have already read and
 * parsed (`req.body`): Node's own request and response, no framework. Also serves GraphiQL.
 */
class ParsedBodyGrafserv extends NodeGrafservBase {
  getDigest(...args: Parameters<NodeGrafservBase["getDigest"]>) {
    const digest = super.getDigest(...args);
    const req = args[1] as IncomingMessage & { body?: unknown };
    return req.body === undefined ? digest : { ...digest, getBody: () => getBodyFromFrameworkBody(req.body) };
  }
}

export const parsedBodyGrafserv = (config: ConstructorParameters<typeof NodeGrafservBase>[0]) => new ParsedBodyGrafserv(config);


