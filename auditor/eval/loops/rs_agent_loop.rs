use anyhow::{bail, Result};

const MAX_TURNS: usize = 40;

pub async fn run(client: &Client, mut req: Request) -> Result<Response> {
    let mut turns = 0;
    loop {
        let resp = client.send(&req).await?;
        if resp.stop_reason == StopReason::EndTurn {
            return Ok(resp);
        }
        turns += 1;
        if turns >= MAX_TURNS {
            bail!("turn cap reached");
        }
        req = req.with_tool_results(resp.run_tools().await?);
    }
}
