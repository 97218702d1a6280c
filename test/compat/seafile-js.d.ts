// seafile-js ships no types: its one class, as the compat test uses it. Every
// method is a call of the web API returning axios's answer.
declare module 'seafile-js' {
  export class SeafileAPI {
    token: string;
    init(opts: { server: string; username?: string; password?: string; token?: string }): SeafileAPI;
    login(): Promise<void>;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    [method: string]: any;
  }
}
