//! The Flight service as it reaches the network: each command, ticket and Flight SQL action body
//! is decoded here first, so a malformed one is the client's error (INVALID_ARGUMENT, said in
//! Portuguese) and never an internal error; what decodes goes on to the door unchanged.
//! (`arrow-flight` answers a command of a known type whose message does not decode with
//! INTERNAL.) A DoPut's command, in the first message of its stream, is decoded by
//! `arrow-flight`; its INTERNAL answer for one that does not decode is turned into the same
//! INVALID_ARGUMENT.

use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::{Any, Command};
use arrow_flight::{
    Action, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest, PollInfo, SchemaResult, Ticket,
};
use prost::Message;
use tonic::{Request, Response, Status, Streaming};

use super::Door;

/// The Flight SQL actions whose body is a Flight SQL message (in an `Any`).
const SQL_ACTIONS: [&str; 8] = [
    "CreatePreparedStatement",
    "ClosePreparedStatement",
    "CreatePreparedSubstraitPlan",
    "BeginTransaction",
    "EndTransaction",
    "BeginSavepoint",
    "EndSavepoint",
    "CancelQuery",
];

/// The door, its requests' commands checked before it answers them.
pub struct Checked(pub Door);

/// `Ok` when `bytes` is empty (no command) or decodes as a Flight SQL message (or a message of a
/// type Flight SQL does not know, which the door answers); INVALID_ARGUMENT otherwise.
fn command(what: &str, bytes: &[u8]) -> Result<(), Status> {
    if bytes.is_empty() {
        return Ok(());
    }
    let any = Any::decode(bytes).map_err(|_| malformed(what))?;
    Command::try_from(any).map(drop).map_err(|_| malformed(what))
}

/// INVALID_ARGUMENT for a `what` (a command, a ticket, an action's body) that does not decode.
fn malformed(what: &str) -> Status {
    Status::invalid_argument(format!("{what} malformado: não é uma mensagem Flight SQL válida"))
}

#[tonic::async_trait]
impl FlightService for Checked {
    type HandshakeStream = <Door as FlightService>::HandshakeStream;
    type ListFlightsStream = <Door as FlightService>::ListFlightsStream;
    type DoGetStream = <Door as FlightService>::DoGetStream;
    type DoPutStream = <Door as FlightService>::DoPutStream;
    type DoExchangeStream = <Door as FlightService>::DoExchangeStream;
    type DoActionStream = <Door as FlightService>::DoActionStream;
    type ListActionsStream = <Door as FlightService>::ListActionsStream;

    async fn handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        self.0.handshake(request).await
    }

    async fn list_flights(&self, request: Request<Criteria>) -> Result<Response<Self::ListFlightsStream>, Status> {
        self.0.list_flights(request).await
    }

    async fn get_flight_info(&self, request: Request<FlightDescriptor>) -> Result<Response<FlightInfo>, Status> {
        command("Comando", &request.get_ref().cmd)?;
        self.0.get_flight_info(request).await
    }

    async fn poll_flight_info(&self, request: Request<FlightDescriptor>) -> Result<Response<PollInfo>, Status> {
        command("Comando", &request.get_ref().cmd)?;
        self.0.poll_flight_info(request).await
    }

    async fn get_schema(&self, request: Request<FlightDescriptor>) -> Result<Response<SchemaResult>, Status> {
        command("Comando", &request.get_ref().cmd)?;
        self.0.get_schema(request).await
    }

    async fn do_get(&self, request: Request<Ticket>) -> Result<Response<Self::DoGetStream>, Status> {
        command("Ticket", &request.get_ref().ticket)?;
        self.0.do_get(request).await
    }

    async fn do_put(&self, request: Request<Streaming<FlightData>>) -> Result<Response<Self::DoPutStream>, Status> {
        // The command is in the stream's first message, which only `arrow-flight` may peek at:
        // its answer to a command that does not decode is made the client's error here.
        self.0.do_put(request).await.map_err(|status| match status.code() {
            tonic::Code::Internal if status.message().contains("Unable to decode Any value") => malformed("Comando"),
            _ => status,
        })
    }

    async fn do_exchange(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        self.0.do_exchange(request).await
    }

    async fn do_action(&self, request: Request<Action>) -> Result<Response<Self::DoActionStream>, Status> {
        let action = request.get_ref();
        if SQL_ACTIONS.contains(&action.r#type.as_str()) {
            command("Corpo da ação", &action.body)?;
        }
        self.0.do_action(request).await
    }

    async fn list_actions(&self, request: Request<Empty>) -> Result<Response<Self::ListActionsStream>, Status> {
        self.0.list_actions(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_flight::sql::{CommandStatementQuery, ProstMessageExt};

    fn any(type_url: &str, value: &[u8]) -> Vec<u8> {
        Any { type_url: type_url.to_string(), value: value.to_vec().into() }.encode_to_vec()
    }

    #[test]
    fn malformed_commands_are_the_clients_error() {
        let query = CommandStatementQuery { query: "SELECT 1".into(), transaction_id: None }.as_any().encode_to_vec();
        assert!(command("Comando", &query).is_ok());
        assert!(command("Comando", &[]).is_ok(), "no command: the door answers");
        assert!(command("Comando", &any("type.googleapis.com/x.Unknown", b"\xff")).is_ok(), "the door answers");
        let statement = "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery";
        for bytes in [b"garbage\x01\x02".to_vec(), any(statement, b"\xff\xff"), query[..query.len() - 3].to_vec()] {
            let status = command("Comando", &bytes).unwrap_err();
            assert_eq!(status.code(), tonic::Code::InvalidArgument, "{bytes:?}");
            assert!(status.message().starts_with("Comando malformado"), "{}", status.message());
        }
    }
}
